/**
 * The GPU node's Prometheus metrics, through prom-client with a registry per app: request counts
 * and latency by route pattern, tokens and generations by kind, and gauges and totals read at
 * scrape time from their owners (block tiers, queue, drain state, imports, VRAM), so live state
 * is never copied or stale.
 */
import type { MiddlewareHandler } from "hono";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { routeOf } from "../../shared/http/request-log.js";
import type { GenerationResult } from "../../shared/protocol.js";
import type { Blocks } from "../blocks/types.js";
import { DECODE_PATHS, DECODE_PHASES } from "../engine/decode-stats.js";
import type { ForegroundGate } from "./foreground.js";
import type { AdmissionQueue } from "./queue.js";

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const TIERS = ["hot", "warm", "cold"] as const;

/** Where the scrape-time values come from. */
export interface MetricSources {
  blocks: Blocks;
  queue: AdmissionQueue;
  foreground: ForegroundGate;
  imports: { readonly count: number };
  tracker: { readonly inFlight: number; readonly draining: boolean };
  /** GPU memory, when the backend reports it. */
  vram?: () => Promise<{ usedBytes: number; totalBytes: number } | null>;
}

type Sample = { labels?: Record<string, string>; value: number };

export class GpuMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: "kvgraft_http_requests_total",
    help: "HTTP requests by route, method and status.",
    labelNames: ["route", "method", "status"],
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: "kvgraft_http_request_duration_seconds",
    help: "Time to the response head by route.",
    labelNames: ["route"],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly tokensIn = new Counter({
    name: "kvgraft_tokens_in_total",
    help: "Prompt/query tokens evaluated.",
    labelNames: ["kind"],
    registers: [this.registry],
  });
  private readonly tokensOut = new Counter({
    name: "kvgraft_tokens_out_total",
    help: "Tokens generated.",
    labelNames: ["kind"],
    registers: [this.registry],
  });
  private readonly generations = new Counter({
    name: "kvgraft_generations_total",
    help: "Grafts and generations by kind and finish reason.",
    labelNames: ["kind", "finish_reason"],
    registers: [this.registry],
  });
  private vramSample: { usedBytes: number; totalBytes: number } | null = null;

  constructor(private readonly sources: MetricSources) {
    const snap = () => sources.blocks.snapshot();
    const perTier = (read: (tier: (typeof TIERS)[number]) => number) =>
      TIERS.map((tier) => ({ labels: { tier }, value: read(tier) }));
    this.total("kvgraft_tier_hits_total", "Block restores served by tier.", ["tier"], () =>
      perTier((t) => snap().hits[t]),
    );
    this.total("kvgraft_tier_misses_total", "Restores that missed the hot tier.", [], () => [
      { value: snap().misses },
    ]);
    this.total("kvgraft_restore_seconds_total", "Time spent restoring blocks, by tier.", ["tier"], () =>
      perTier((t) => snap().restoreMsSum[t] / 1000),
    );
    this.total("kvgraft_restore_bytes_total", "Bytes of block state loaded, by tier.", ["tier"], () =>
      perTier((t) => snap().bytesLoaded[t]),
    );
    this.gauge("kvgraft_blocks", "Blocks by tier (cold = all stored blocks).", ["tier"], () => {
      const s = snap();
      return [
        { labels: { tier: "hot" }, value: s.hot.length },
        { labels: { tier: "warm" }, value: s.warm.length },
        { labels: { tier: "cold" }, value: s.coldCount },
      ];
    });
    this.gauge("kvgraft_warm_tier_bytes", "RAM used by the warm tier.", [], () => [
      { value: snap().warmBytes },
    ]);
    this.gauge("kvgraft_warm_tier_budget_bytes", "RAM the warm tier may use.", [], () => [
      { value: snap().warmBudgetBytes },
    ]);
    this.total("kvgraft_warm_start_blocks_total", "Blocks warm start read into the warm tier.", [], () => [
      { value: snap().warmStart.blocks },
    ]);
    this.total("kvgraft_warm_start_bytes_total", "Bytes warm start read into the warm tier.", [], () => [
      { value: snap().warmStart.bytes },
    ]);
    this.total(
      "kvgraft_warm_start_corrupt_total",
      "Blocks warm start found corrupt (quarantined).",
      [],
      () => [{ value: snap().warmStart.corrupt.length }],
    );
    this.gauge("kvgraft_warm_start_running", "1 while warm start fills the warm tier.", [], () => [
      { value: snap().warmStart.state === "running" ? 1 : 0 },
    ]);
    this.gauge("kvgraft_slots_busy", "Engine slots in use.", [], () => [{ value: snap().slots.busy }]);
    this.gauge(
      "kvgraft_slots",
      "Engine slots (the hot tier), by how the count was settled: config, or as many as fit in vram or ram.",
      ["sized_by"],
      () => [{ labels: { sized_by: snap().slots.sizedBy }, value: snap().slots.total }],
    );
    this.total(
      "kvgraft_decode_steps_total",
      "llama_decode calls by path (batched: the batch loop; native: a lone greedy step; library: node-llama-cpp's queue).",
      ["path"],
      () => DECODE_PATHS.map((path) => ({ labels: { path }, value: snap().decode[path].steps })),
    );
    this.total(
      "kvgraft_decode_sequences_total",
      "Sequences summed over llama_decode calls, by path: over the steps, the mean batch size.",
      ["path"],
      () => DECODE_PATHS.map((path) => ({ labels: { path }, value: snap().decode[path].sequences })),
    );
    this.total(
      "kvgraft_decode_fill_tokens_total",
      "Throwaway tokens the batch loop gave idle slots between busy ones and queries joining in consecutive slots, " +
        "so that a step takes fewer forward passes (KV_STEP_FILL).",
      [],
      () => [{ value: snap().decode.batched.fillers }],
    );
    this.total(
      "kvgraft_decode_passes_total",
      "Forward passes of the batch loop's llama_decode calls, as llama.cpp's sequential split cuts a batch with a KV " +
        "stream per slot (an estimate from its source; each pass reads all the weights).",
      [],
      () => [{ value: snap().decode.batched.passes }],
    );
    this.total(
      "kvgraft_decode_phase_seconds_total",
      "Wall time of the batch loop's steps by path (batched, native) and phase (gap: between steps; lock; prepare: " +
        "building the batch; decode: llama_decode; sample: every member's sampling).",
      ["path", "phase"],
      () => {
        const d = snap().decode;
        return (["batched", "native"] as const).flatMap((path) =>
          DECODE_PHASES.map((phase) => ({ labels: { path, phase }, value: d[path].phaseMs[phase] / 1000 })),
        );
      },
    );
    this.total(
      "kvgraft_decode_batch_steps_total",
      "llama_decode calls of generation (batched and native paths) by the sequences they held.",
      ["sequences"],
      () => {
        const d = snap().decode;
        const by: Record<string, number> = { ...d.batched.bySequences };
        for (const [k, v] of Object.entries(d.native.bySequences)) by[k] = (by[k] ?? 0) + v;
        return Object.entries(by).map(([sequences, value]) => ({ labels: { sequences }, value }));
      },
    );
    this.gauge("kvgraft_queue_depth", "Model jobs running or waiting for admission.", [], () => [
      { value: sources.queue.depth },
    ]);
    this.gauge("kvgraft_queue_capacity", "Depth at which model jobs are refused.", [], () => [
      { value: sources.queue.capacity },
    ]);
    this.total("kvgraft_queue_rejected_total", "Model jobs refused with queue_full.", [], () => [
      { value: sources.queue.stats.rejected },
    ]);
    this.gauge(
      "kvgraft_background_jobs",
      "Background model jobs (the flywheel's solves) running, or waiting for other model work to end.",
      ["state"],
      () => {
        const { running, waiting } = sources.foreground.stats;
        return [
          { labels: { state: "running" }, value: running },
          { labels: { state: "waiting" }, value: waiting },
        ];
      },
    );
    this.total(
      "kvgraft_background_preempted_total",
      "Background model jobs stopped for other model work and run again.",
      [],
      () => [{ value: sources.foreground.stats.preempted }],
    );
    this.gauge("kvgraft_requests_in_flight", "Requests in progress.", [], () => [
      { value: sources.tracker.inFlight },
    ]);
    this.gauge("kvgraft_imports_open", "Open import sessions.", [], () => [{ value: sources.imports.count }]);
    this.gauge("kvgraft_draining", "1 while draining.", [], () => [
      { value: sources.tracker.draining ? 1 : 0 },
    ]);
    this.gauge("kvgraft_vram_bytes", "GPU memory (when the backend reports it).", ["kind"], () =>
      this.vramSample
        ? [
            { labels: { kind: "used" }, value: this.vramSample.usedBytes },
            { labels: { kind: "total" }, value: this.vramSample.totalBytes },
          ]
        : [],
    );
  }

  /** Content type of the exposition that `render` returns. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Counts each request by route pattern, method and status, and observes its latency. */
  middleware(): MiddlewareHandler {
    return async (c, next) => {
      const t0 = performance.now();
      try {
        await next();
      } finally {
        const route = routeOf(c);
        this.requests.inc({ route, method: c.req.method, status: String(c.res.status) });
        this.latency.observe({ route }, (performance.now() - t0) / 1000);
      }
    };
  }

  /** Tokens of one piece of model work. */
  recordTokens(kind: string, result: { tokensIn: number; tokensOut: number }): void {
    this.tokensIn.inc({ kind }, result.tokensIn);
    this.tokensOut.inc({ kind }, result.tokensOut);
  }

  /** Tokens and finish reason of one graft or generation. */
  recordGeneration(kind: string, result: GenerationResult): void {
    this.recordTokens(kind, result);
    this.generations.inc({ kind, finish_reason: result.finishReason });
  }

  /** The text exposition of every metric (VRAM sampled now, when the backend reports it). */
  async render(): Promise<string> {
    this.vramSample = this.sources.vram ? await this.sources.vram().catch(() => null) : null;
    return this.registry.metrics();
  }

  /** A gauge whose samples are read at scrape time. */
  private gauge(name: string, help: string, labelNames: string[], read: () => Sample[]): void {
    const collect = function (this: Gauge) {
      this.reset();
      for (const s of read()) this.set(s.labels ?? {}, s.value);
    };
    new Gauge({ name, help, labelNames, registers: [this.registry], collect });
  }

  /** A counter whose totals are kept by their owner and read at scrape time. */
  private total(name: string, help: string, labelNames: string[], read: () => Sample[]): void {
    const collect = function (this: Counter) {
      this.reset();
      for (const s of read()) this.inc(s.labels ?? {}, s.value);
    };
    new Counter({ name, help, labelNames, registers: [this.registry], collect });
  }
}
