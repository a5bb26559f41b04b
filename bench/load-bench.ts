/**
 * `kvgraft bench edge`: an open-loop load test through the edge. Requests are sent at a constant
 * arrival rate whatever the answers do (a request is never held back by a slow earlier one, so
 * overload shows up as queueing or shedding, not as a politely slower client), and each latency
 * is measured from the moment the request was due, so a lagging sender cannot hide queueing
 * ("coordinated omission"). Two workloads:
 *   fast   the exact text of a verified library problem: answered from the library, no GPU call;
 *   graft  a deposited, non-parametric problem with new numbers: the edge grafts its block on the
 *          GPU node and the model answers after it.
 * Against a running edge (--url, --key) or one it starts itself (`kvgraft start --json` in a child
 * process with a fresh data directory and the tiny random-weight model). Reports throughput,
 * p50/p95/p99 latency of accepted requests, the error rate, status and error-code counts, the
 * answer sources, and whether the edge is still healthy afterwards.
 */
import { randomBytes } from "node:crypto";
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kvgraftSameEntryArgs, readyUrl, supervise } from "../tools/process/supervise.js";

export type LoadPath = "fast" | "graft";

export interface LoadRunOptions {
  url: string;
  key: string;
  path: LoadPath;
  /** Requests per second, sent on schedule. */
  rate: number;
  durationS: number;
  /** Per-request timeout (a request past it counts as an error, status "timeout"). */
  timeoutMs: number;
  /** Token budget of graft requests. */
  maxTokens: number;
  /** Called with every request's outcome as it completes (timelines are built from these). */
  onResult?: (result: RequestResult) => void;
}

/** One request's outcome. */
export interface RequestResult {
  /** When it was due, in ms after the run started. */
  dueMs: number;
  /** From when it was due until its answer (or its failure). */
  latencyMs: number;
  /** The HTTP status, or `timeout` / `network_error`. */
  status: string;
  ok: boolean;
}

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export interface LoadReport {
  path: LoadPath;
  rate: number;
  durationS: number;
  offered: number;
  ok: number;
  /** Accepted (2xx) answers per second of the sending window. */
  throughputRps: number;
  /** Share of requests that did not get a 2xx (shed, failed, timed out). */
  errorRate: number;
  /** Share refused with 429/503 (load shed on purpose). */
  shedRate: number;
  statusCounts: Record<string, number>;
  codeCounts: Record<string, number>;
  sources: Record<string, number>;
  /** Latency of 2xx answers, from when each request was due. */
  latencyMs: Percentiles | null;
  /** Latency of 429/503 answers (shedding should be fast). */
  shedLatencyMs: Percentiles | null;
  /** Largest delay between a request's due time and its send (the sender's own lag). */
  maxSendLagMs: number;
  /** GET /health right after the run. */
  healthAfter: { status: number; body: string };
}

/** Nearest-rank percentiles of a sample (null when empty). */
export function percentiles(values: number[]): Percentiles | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
  const r = (x: number) => Math.round(x * 10) / 10;
  return { p50: r(at(50)), p95: r(at(95)), p99: r(at(99)), max: r(sorted.at(-1) as number) };
}

const CRATE = {
  problem: "A crate holds 17 rows of 23 jars. How many jars are in the crate?",
  solution: "17 rows of 23 jars make 17 × 23 = 391 jars.",
  // Not parametric: new numbers cannot be re-run, so they go to the block (graft).
  program: "print(391)\n",
  answer: "391",
};

async function api(url: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  // biome-ignore lint/suspicious/noExplicitAny: shapes are checked where used
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

/** Prepares the library for a workload; returns the request bodies to cycle through. */
export async function prepareWorkload(
  url: string,
  key: string,
  path: LoadPath,
  maxTokens: number,
): Promise<{ bodies: string[]; source: string }> {
  if (path === "fast") {
    const lib = await api(url, key, "GET", "/v1/library?limit=100");
    if (lib.status !== 200) throw new Error(`GET /v1/library: HTTP ${lib.status}`);
    for (const item of lib.body.items as { problem: string; answer: string | null }[]) {
      if (item.answer === null) continue;
      const body = JSON.stringify({ problem: item.problem });
      const probe = await api(url, key, "POST", "/v1/solve", JSON.parse(body));
      if (probe.status === 200 && probe.body.source === "library")
        return { bodies: [body], source: "library" };
    }
    // An empty library (`--stack serve`): deposit one checked solution, then ask its exact text.
    const dep = await api(url, key, "POST", "/admin/solutions", CRATE);
    if (dep.status !== 200 && dep.status !== 201)
      throw new Error(`POST /admin/solutions: HTTP ${dep.status} ${JSON.stringify(dep.body)}`);
    const body = JSON.stringify({ problem: CRATE.problem });
    const probe = await api(url, key, "POST", "/v1/solve", JSON.parse(body));
    if (probe.status === 200 && probe.body.source === "library") return { bodies: [body], source: "library" };
    throw new Error("no library problem is answered from the library (fast path)");
  }
  const dep = await api(url, key, "POST", "/admin/solutions", CRATE);
  if (dep.status !== 200 && dep.status !== 201)
    throw new Error(`POST /admin/solutions: HTTP ${dep.status} ${JSON.stringify(dep.body)}`);
  // One query with new numbers, repeated: every request grafts the same block (routing, graft
  // and decoding each time), and the flywheel worker that `kvgraft start` runs (KVGRAFT_FLYWHEEL=on;
  // off by default on the generated model) gets one item to re-solve in the background, not one
  // per request competing with the measured grafts.
  const bodies = Array.from({ length: 1 }, (_, i) =>
    JSON.stringify({
      problem: `A crate holds ${12 + i} rows of ${30 + i} jars. How many jars are in the crate?`,
      maxTokens,
    }),
  );
  const probe = await api(url, key, "POST", "/v1/solve", JSON.parse(bodies[0] as string));
  if (probe.status !== 200)
    throw new Error(`graft probe: HTTP ${probe.status} ${JSON.stringify(probe.body)}`);
  return { bodies, source: String(probe.body.source) };
}

/** Waits until the edge's flywheel runs nothing; returns the ms waited. */
export async function waitFlywheelIdle(url: string, key: string, maxMs: number): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < maxMs) {
    const r = await api(url, key, "GET", "/admin/flywheel?limit=1").catch(() => null);
    const p =
      r?.status === 200 ? (r.body?.progress as { queued?: number; running?: number } | undefined) : undefined;
    // Queued items wait for a worker that may not exist (`--stack serve`); running ones use the GPU.
    if (!p || (p.running ?? 0) === 0) break;
    await new Promise((res) => setTimeout(res, 500));
  }
  return performance.now() - t0;
}

/** Sends `rate` requests per second for `durationS` seconds and waits for every answer. */
export async function runLoad(o: LoadRunOptions, bodies: string[]): Promise<LoadReport> {
  const total = Math.max(1, Math.round(o.rate * o.durationS));
  const intervalMs = 1000 / o.rate;
  const statusCounts: Record<string, number> = {};
  const codeCounts: Record<string, number> = {};
  const sources: Record<string, number> = {};
  const okLatency: number[] = [];
  const shedLatency: number[] = [];
  let maxSendLagMs = 0;
  const pending: Promise<void>[] = [];
  const bump = (m: Record<string, number>, k: string) => {
    m[k] = (m[k] ?? 0) + 1;
  };

  const fire = (i: number, due: number) => {
    maxSendLagMs = Math.max(maxSendLagMs, performance.now() - due);
    pending.push(
      (async () => {
        let status: string;
        let ok = false;
        try {
          const res = await fetch(`${o.url}/v1/solve`, {
            method: "POST",
            headers: { authorization: `Bearer ${o.key}`, "content-type": "application/json" },
            body: bodies[i % bodies.length] as string,
            signal: AbortSignal.timeout(o.timeoutMs),
          });
          const text = await res.text();
          const ms = performance.now() - due;
          status = String(res.status);
          let body: {
            source?: string;
            error?: { code?: string; details?: { upstreamCode?: string } };
          } | null = null;
          try {
            body = JSON.parse(text);
          } catch {
            body = null;
          }
          if (res.ok) {
            ok = true;
            okLatency.push(ms);
            bump(sources, body?.source ?? "unknown");
          } else {
            const upstream = body?.error?.details?.upstreamCode;
            bump(codeCounts, `${body?.error?.code ?? `http_${res.status}`}${upstream ? `/${upstream}` : ""}`);
            if (res.status === 429 || res.status === 503) shedLatency.push(ms);
          }
        } catch (err) {
          status = (err as Error).name === "TimeoutError" ? "timeout" : "network_error";
        }
        bump(statusCounts, status);
        o.onResult?.({ dueMs: due - t0, latencyMs: performance.now() - due, status, ok });
      })(),
    );
  };

  const t0 = performance.now();
  let i = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (i < total && t0 + i * intervalMs <= now) {
        fire(i, t0 + i * intervalMs);
        i++;
      }
      if (i >= total) return resolve();
      setTimeout(tick, Math.max(0, Math.min(5, t0 + i * intervalMs - now)));
    };
    tick();
  });
  await Promise.all(pending);

  const ok = okLatency.length;
  const shed = (statusCounts["429"] ?? 0) + (statusCounts["503"] ?? 0);
  const health = await fetch(`${o.url}/health`, { signal: AbortSignal.timeout(10_000) }).then(
    async (r) => ({ status: r.status, body: await r.text() }),
    (err: Error) => ({ status: 0, body: err.message }),
  );
  return {
    path: o.path,
    rate: o.rate,
    durationS: o.durationS,
    offered: total,
    ok,
    throughputRps: Math.round((ok / o.durationS) * 10) / 10,
    errorRate: Math.round(((total - ok) / total) * 1000) / 1000,
    shedRate: Math.round((shed / total) * 1000) / 1000,
    statusCounts,
    codeCounts,
    sources,
    latencyMs: percentiles(okLatency),
    shedLatencyMs: percentiles(shedLatency),
    maxSendLagMs: Math.round(maxSendLagMs * 10) / 10,
    healthAfter: health,
  };
}

/** How long a stopped service may drain before it is killed. */
const STOP_GRACE_MS = 60_000;

/** `kvgraft start --json` in a child process; resolves with its URLs once ready. */
export async function startKvgraft(options: {
  dataDir: string;
  /** The environment the child inherits. */
  env: Record<string, string | undefined>;
  log?: (line: string) => void;
}): Promise<{ url: string; key: string; stop(): Promise<number | null> }> {
  // A --data-dir that does not exist yet is made here: the log file below goes into it.
  mkdirSync(options.dataDir, { recursive: true });
  const logPath = join(options.dataDir, "start.log");
  const logFile = createWriteStream(logPath);
  const started = supervise({
    name: `kvgraft start (see ${logPath})`,
    args: kvgraftSameEntryArgs("start", "--json", "--data-dir", options.dataDir),
    env: {
      ...options.env,
      EDGE_PORT: "0",
      GPU_PORT: "0",
      KVGRAFT_RATE_LIMIT: options.env.KVGRAFT_RATE_LIMIT ?? "1000000",
    },
    ready: (line) => {
      const summary = line as { edgeUrl?: unknown; adminKey?: unknown } | null;
      return typeof summary?.edgeUrl === "string" && typeof summary.adminKey === "string"
        ? { url: summary.edgeUrl, key: summary.adminKey }
        : undefined;
    },
    readyTimeoutMs: 600_000,
    stderr: logFile,
    // The IPC channel closes when this process dies, and the child then stops (cli/main.ts).
    ipc: true,
  });
  const summary = await started.ready.catch((err: Error) => {
    logFile.end();
    throw err;
  });
  options.log?.(`kvgraft start is up: edge ${summary.url}`);
  return {
    ...summary,
    stop: async () => {
      const { code } = await started.stop(STOP_GRACE_MS);
      logFile.end();
      return code;
    },
  };
}

/** A tiny generated model in `dir` (written once), for stacks started without MODEL_PATH. */
export async function tinyModel(dir: string): Promise<string> {
  const { resolveSpec } = await import("../gpu-node/synth/presets.js");
  const { writeSyntheticModel } = await import("../gpu-node/synth/synth-model.js");
  mkdirSync(dir, { recursive: true });
  const model = join(dir, "tiny-llama-seed0.gguf");
  if (!existsSync(model)) writeSyntheticModel(model, resolveSpec("tiny-llama", {}), "0");
  return model;
}

/**
 * The two services without `kvgraft start`'s extras (starter library, flywheel worker):
 * `kvgraft serve gpu` and `kvgraft serve edge` as child processes on the tiny model. The flywheel
 * re-solves unsure answers on the same GPU node in the background, which makes graft-path figures
 * depend on its queue; this stack measures the serving path alone.
 */
export async function startServeStack(options: {
  dataDir: string;
  /** The environment the children inherit (MODEL_PATH: their model, else a generated tiny one). */
  env: Record<string, string | undefined>;
  log?: (line: string) => void;
}): Promise<{ url: string; key: string; stop(): Promise<number | null> }> {
  mkdirSync(options.dataDir, { recursive: true });
  const model = options.env.MODEL_PATH || (await tinyModel(options.dataDir));
  const secret = randomBytes(24).toString("hex");
  const log = createWriteStream(join(options.dataDir, "serve.log"));
  const run = <T>(args: string[], env: Record<string, string>, ready: (line: unknown) => T | undefined) =>
    supervise({
      name: `kvgraft ${args.slice(0, 2).join(" ")} (see serve.log)`,
      args: kvgraftSameEntryArgs(...args),
      env: { ...options.env, KVGRAFT_GPU_SECRET: secret, ...env },
      ready,
      readyTimeoutMs: 600_000,
      stderr: log,
      // The IPC channel closes when this process dies, and the child then stops (cli/main.ts).
      ipc: true,
    });
  const gpu = run(
    ["serve", "gpu", "--model", model, "--port", "0", "--data-dir", join(options.dataDir, "gpu"), "--json"],
    {},
    readyUrl,
  );
  const gpuUrl = await gpu.ready;
  const edge = run(
    ["serve", "edge", "--port", "0", "--db", `file:${join(options.dataDir, "edge.db")}`, "--json"],
    {
      KVGRAFT_GPU_URL: gpuUrl,
      KVGRAFT_RATE_LIMIT: options.env.KVGRAFT_RATE_LIMIT ?? "1000000",
    },
    edgeReady,
  );
  const ready = await edge.ready.catch(async (err: Error) => {
    await gpu.stop(STOP_GRACE_MS);
    throw err;
  });
  options.log?.(`kvgraft serve gpu + serve edge are up: edge ${ready.url}`);
  return {
    url: ready.url,
    key: ready.key,
    stop: async () => {
      const e = (await edge.stop(STOP_GRACE_MS)).code;
      const g = (await gpu.stop(STOP_GRACE_MS)).code;
      log.end();
      return e === 0 && g === 0 ? 0 : (e ?? g ?? 1);
    },
  };
}

/** The ready line of `kvgraft serve edge --json` ({url, adminKey}); the key is the one generated now. */
export function edgeReady(line: unknown): { url: string; key: string } | undefined {
  const url = readyUrl(line);
  const key = (line as { adminKey?: unknown }).adminKey;
  return url && typeof key === "string" ? { url, key } : undefined;
}

export interface BenchEdgeOptions {
  path: LoadPath;
  rates: number[];
  durationS: number;
  timeoutMs: number;
  maxTokens: number;
  /** A running edge; without it `kvgraft start` is run in a fresh data directory. */
  url?: string;
  key?: string;
  dataDir?: string;
  /** The environment the processes started here inherit (MODEL_PATH picks their model). */
  env: Record<string, string | undefined>;
  /** What to start without --url: `kvgraft start` (default) or `serve` (serve gpu + serve edge, no flywheel). */
  stack?: "start" | "serve";
  /** Unreported warm-up at the first rate (default 10 s). */
  warmupS?: number;
  /** Pause between rates, for queues to drain. */
  pauseS?: number;
  log?: (line: string) => void;
}

export interface BenchEdgeResult {
  edge: { url: string; startedHere: boolean; stack: "start" | "serve" | null; exitCode: number | null };
  machine: { cpus: number; node: string; platform: string };
  workload: { path: LoadPath; source: string; distinctBodies: number };
  runs: LoadReport[];
}

/** Runs the workload at each rate in turn against one edge. */
export async function benchEdge(o: BenchEdgeOptions): Promise<BenchEdgeResult> {
  const log = o.log ?? (() => undefined);
  const os = await import("node:os");
  let started: { url: string; key: string; stop(): Promise<number | null> } | null = null;
  let ownDir: string | null = null;
  let url = o.url;
  let key = o.key;
  if (!url) {
    const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), "kvgraft-bench-edge-"));
    if (!o.dataDir) ownDir = dataDir;
    const stack = o.stack ?? "start";
    log(
      `starting kvgraft ${stack === "start" ? "start" : "serve gpu + serve edge"} in ${dataDir} (tiny model unless MODEL_PATH is set) ...`,
    );
    started =
      stack === "start"
        ? await startKvgraft({ dataDir, env: o.env, log })
        : await startServeStack({ dataDir, env: o.env, log });
    url = started.url;
    key = started.key;
  }
  if (!key) throw new Error("an API key is needed (--key or KVGRAFT_API_KEY) with --url");
  const runs: LoadReport[] = [];
  let exitCode: number | null = null;
  let workload: BenchEdgeResult["workload"];
  try {
    const prepared = await prepareWorkload(url, key, o.path, o.maxTokens);
    const load = (rate: number, durationS: number) =>
      runLoad(
        { url, key, path: o.path, rate, durationS, timeoutMs: o.timeoutMs, maxTokens: o.maxTokens },
        prepared.bodies,
      );
    workload = { path: o.path, source: prepared.source, distinctBodies: prepared.bodies.length };
    log(`workload ${o.path}: first answer from ${prepared.source}`);
    if ((o.warmupS ?? 10) > 0) {
      // Not reported: JIT, connection pools, caches and the node's first evaluations.
      log(`warm-up: ${o.rates[0]} req/s for ${o.warmupS ?? 10} s`);
      await load(o.rates[0] as number, o.warmupS ?? 10);
      await new Promise((r) => setTimeout(r, (o.pauseS ?? 3) * 1000));
    }
    for (const [k, rate] of o.rates.entries()) {
      if (k > 0) await new Promise((r) => setTimeout(r, (o.pauseS ?? 3) * 1000));
      // Background GPU work queued by earlier requests (the flywheel's re-solves, which
      // `kvgraft start` runs) would compete with the measured requests: let it finish first.
      const waited = await waitFlywheelIdle(url, key, 60_000);
      if (waited > 0) log(`waited ${Math.round(waited / 1000)} s for the flywheel queue to empty`);
      log(`${o.path}: ${rate} req/s for ${o.durationS} s ...`);
      const report = await load(rate, o.durationS);
      log(loadLine(report));
      runs.push(report);
    }
  } finally {
    if (started) exitCode = await started.stop();
    if (ownDir) rmSync(ownDir, { recursive: true, force: true });
  }
  return {
    edge: { url, startedHere: started !== null, stack: started ? (o.stack ?? "start") : null, exitCode },
    machine: { cpus: os.cpus().length, node: process.version, platform: `${os.platform()} ${os.release()}` },
    workload,
    runs,
  };
}

/** One human-readable line per run. */
export function loadLine(r: LoadReport): string {
  const lat = r.latencyMs
    ? `p50 ${r.latencyMs.p50} p95 ${r.latencyMs.p95} p99 ${r.latencyMs.p99} ms`
    : "no 2xx";
  const statuses = Object.entries(r.statusCounts)
    .map(([s, n]) => `${s}:${n}`)
    .join(" ");
  return (
    `${r.path} @ ${r.rate}/s x ${r.durationS} s: ${r.ok}/${r.offered} ok, ${r.throughputRps} req/s, ${lat}, ` +
    `errors ${(r.errorRate * 100).toFixed(1)}% (shed ${(r.shedRate * 100).toFixed(1)}%) [${statuses}], health after ${r.healthAfter.status}`
  );
}
