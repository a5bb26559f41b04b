/**
 * `kvgraft bench serve`: kvgraft's GPU node and llama.cpp's own server (`llama-server`) on the same
 * model file and the same open-loop arrivals. Each workload deposits its blocks on the node (the
 * same texts are llama-server's prompt prefixes, which its prompt cache keeps per slot), then sends
 * requests at a constant rate for a fixed time whatever the answers do, each latency measured from
 * the moment the request was due (no coordinated omission):
 *   hot-1    every request grafts one block (llama-server: the same prefix every time);
 *   warm-N   requests cycle over N blocks (more blocks than slots: restores from RAM on kvgraft,
 *            prefix re-evaluation or slot churn on llama-server);
 *   cold-N   the same, with kvgraft's warm tier off (KVGRAFT_WARM_BUDGET_BYTES=0): a block that no
 *            slot holds is restored from disk (llama-server has no tiers: for it this is warm-N).
 * kvgraft's side says which tier served its restores in the window (restoresByTier).
 * kvgraft: `POST /v1/graft` (signed) on a `kvgraft serve gpu` child; llama-server: `POST
 * /completion` with `cache_prompt`, greedy, `n_predict` = the same token budget; its warm-up fills
 * every slot (its prompt cache is per slot), and its `/metrics` (`--metrics`) give its decode batch and
 * the prompt tokens it evaluated in the window. Both children run
 * from this process and are stopped at the end. Writes
 * `{workloads: [{name, kvgraft: {throughputRps, p99Ms, tokensPerS, ...}, llamaServer: {...}}]}`.
 */
import { randomBytes } from "node:crypto";
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DECODE_PHASES,
  type DecodePhase,
  noPhases,
  type StepPhaseMeans,
  stepPhaseMeans,
} from "../gpu-node/engine/decode-stats.js";
import { createGpuClient } from "../shared/gpu-client.js";
import { tierSchema } from "../shared/protocol.js";
import { kvgraftSameEntryArgs, readyUrl, supervise } from "../tools/process/supervise.js";
import { parseTierHits, type TierHits } from "./scale-out/cluster.js";

/** The timeout of what is not measured: deposits, warm-up requests, metrics. */
const SETUP_TIMEOUT_MS = 600_000;

export interface ServeBenchOptions {
  modelPath: string;
  /** The llama-server binary; null runs kvgraft's side alone (`--only kvgraft`). */
  llamaServer: string | null;
  /** Workload names: `hot-1`, `warm-N`. */
  workloads: string[];
  /** Requests per second offered. */
  rate: number;
  durationS: number;
  maxTokens: number;
  /** Slots of both servers (kvgraft `--slots`, llama-server `--parallel`); "vram" sizes kvgraft's from memory. */
  slots: number | "vram";
  /** Tokens per slot. */
  contextSize: number;
  /** Characters of each block's text (the result reports the tokens they made: `blockTokens`). */
  blockChars: number;
  timeoutMs: number;
  /**
   * llama-server's host-memory prompt cache in MiB (its `--cache-ram`); undefined keeps its default
   * (8,192 MiB in this release). It saves a slot's whole state there before the slot takes a new
   * prompt: 771 MiB a request for the 12b preset's ~2,000-token blocks (the 2026-12-02 H200 log).
   */
  llamaCacheRamMiB?: number;
  /** Environment of both children (KV_LLAMA, KV_THREADS, CUDA_VISIBLE_DEVICES ...). */
  env: NodeJS.ProcessEnv;
  /** Where the children's logs go. */
  logDir?: string;
  onProgress?: (line: string) => void;
}

/**
 * What one server did on one workload. kvgraft's side has the mean wall ms of a batched step by
 * phase (`decodeMsPerStep`, ...: decode-stats.ts's phases, from kvgraft_decode_phase_seconds_total).
 */
export interface ServeSide extends Partial<StepPhaseMeans> {
  offeredRps: number;
  sent: number;
  ok: number;
  errors: number;
  /** Answers per second over the window from the first due time to the last answer. */
  throughputRps: number;
  p50Ms: number;
  p99Ms: number;
  /** Generated tokens per second over the same window. */
  tokensPerS: number;
  /**
   * Mean sequences per decode in the window, from /metrics: kvgraft's generation steps; llama-server's
   * `n_busy_slots_per_decode` (every llama_decode, prompt chunks included).
   */
  meanDecodeBatch?: number;
  /** kvgraft only: the batched path's steps in the window (one llama_decode each). */
  batchedSteps?: number;
  /** kvgraft only: throwaway tokens a batched step gave idle slots between busy ones (KV_STEP_FILL). */
  fillersPerStep?: number;
  /** Forward passes a batched step (kvgraft_decode_passes_total: llama.cpp's split, estimated). */
  passesPerStep?: number;
  /** llama-server only: prompt tokens it evaluated per answered request in the window (not from its cache). */
  promptTokensPerRequest?: number;
  /** kvgraft only: the window's block restores by the tier that served them (kvgraft_tier_hits_total). */
  restoresByTier?: TierHits;
  statuses: Record<string, number>;
}

export interface ServeWorkload {
  name: string;
  blocks: number;
  /** Tokens of the first block (kvgraft's manifest). */
  blockTokens: number;
  kvgraft: ServeSide;
  llamaServer: ServeSide | null;
}

export interface ServeBenchResult {
  model: string;
  slots: number | "vram";
  contextSize: number;
  maxTokens: number;
  rate: number;
  durationS: number;
  /** llama-server's --cache-ram as run ("default": not passed). */
  llamaCacheRamMiB: number | "default";
  workloads: ServeWorkload[];
}

/** One request's outcome. */
interface Outcome {
  ms: number;
  status: string;
  tokens: number;
}

/** Parses `hot-1` / `warm-12` / `cold-12` into the number of blocks. */
export function workloadBlocks(name: string): number {
  const m = /^(hot|warm|cold)-(\d+)$/.exec(name);
  if (!m) throw new Error(`unknown workload '${name}' (hot-1, warm-N or cold-N)`);
  const n = Number(m[2]);
  if (m[1] === "hot" && n !== 1) throw new Error("the hot workload is hot-1");
  if (n < 1) throw new Error(`workload '${name}' needs at least one block`);
  return n;
}

/** The text of block `b`: deterministic, `chars` characters. */
export function blockText(b: number, chars: number): string {
  let text = `Worked solution ${b}:`;
  for (let i = 0; text.length < chars; i++)
    text += ` step ${i} of problem ${b} adds ${(b * 31 + i * 7) % 97} apples;`;
  return text.slice(0, chars);
}

/** Sends `count` requests at `rate` per second, open loop; each latency from its due time. */
export async function openLoop(
  rate: number,
  durationS: number,
  send: (i: number) => Promise<{ status: string; tokens: number }>,
): Promise<{ outcomes: Outcome[]; windowMs: number }> {
  const count = Math.max(1, Math.round(rate * durationS));
  const t0 = performance.now();
  const outcomes: Outcome[] = [];
  let last = t0;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(
      send(i)
        .catch((err: unknown) => ({ status: errorStatus(err), tokens: 0 }))
        .then((r) => {
          const end = performance.now();
          last = Math.max(last, end);
          outcomes.push({ ms: end - due, status: r.status, tokens: r.tokens });
        }),
    );
  }
  await Promise.all(pending);
  return { outcomes, windowMs: last - t0 };
}

function errorStatus(err: unknown): string {
  const e = err as { status?: number; code?: string; name?: string };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return "timeout";
  return e?.code ? `${e.status ?? "error"} ${e.code}` : String(e?.status ?? "error");
}

/** Throughput, latency percentiles and token rate of a run's outcomes. */
export function summarize(outcomes: Outcome[], windowMs: number, rate: number): ServeSide {
  const ok = outcomes.filter((o) => o.status === "200");
  const ms = ok.map((o) => o.ms).sort((a, b) => a - b);
  const pct = (p: number) =>
    ms.length ? (ms[Math.min(ms.length - 1, Math.ceil(p * ms.length) - 1)] as number) : 0;
  const statuses: Record<string, number> = {};
  for (const o of outcomes) statuses[o.status] = (statuses[o.status] ?? 0) + 1;
  const seconds = Math.max(windowMs, 1) / 1000;
  const round = (x: number, d = 1) => Number(x.toFixed(d));
  return {
    offeredRps: rate,
    sent: outcomes.length,
    ok: ok.length,
    errors: outcomes.length - ok.length,
    throughputRps: round(ok.length / seconds, 2),
    p50Ms: round(pct(0.5)),
    p99Ms: round(pct(0.99)),
    tokensPerS: round(ok.reduce((s, o) => s + o.tokens, 0) / seconds),
    statuses,
  };
}

/** Runs every workload on kvgraft's GPU node, then on llama-server (when given). */
export async function benchServe(options: ServeBenchOptions): Promise<ServeBenchResult> {
  const progress = options.onProgress ?? (() => undefined);
  const logDir = options.logDir ?? mkdtempSync(join(tmpdir(), "kvgraft-serve-bench-"));
  mkdirSync(logDir, { recursive: true });
  const workloads: ServeWorkload[] = [];
  const query = (i: number) => ` Question ${i}: how many apples in all? Answer:`;
  for (const name of options.workloads) {
    const blocks = workloadBlocks(name);
    const texts = Array.from({ length: blocks }, (_, b) => blockText(b, options.blockChars));
    progress(`${name}: kvgraft`);
    const { side: kvgraft, blockTokens } = await runKvgraft(options, logDir, name, texts, query);
    let llamaServer: ServeSide | null = null;
    if (options.llamaServer) {
      progress(`${name}: llama-server`);
      llamaServer = await runLlamaServer(options, options.llamaServer, logDir, name, texts, query);
    }
    workloads.push({ name, blocks, blockTokens, kvgraft, llamaServer });
  }
  return {
    model: options.modelPath,
    slots: options.slots,
    contextSize: options.contextSize,
    maxTokens: options.maxTokens,
    rate: options.rate,
    durationS: options.durationS,
    llamaCacheRamMiB: options.llamaCacheRamMiB ?? "default",
    workloads,
  };
}

async function runKvgraft(
  options: ServeBenchOptions,
  logDir: string,
  name: string,
  texts: string[],
  query: (i: number) => string,
): Promise<{ side: ServeSide; blockTokens: number }> {
  const secret = randomBytes(24).toString("hex");
  const dataDir = mkdtempSync(join(tmpdir(), "kvgraft-serve-node-"));
  const log = createWriteStream(join(logDir, `kvgraft-${name}.log`));
  const node = supervise({
    name: `kvgraft serve gpu (see ${join(logDir, `kvgraft-${name}.log`)})`,
    args: kvgraftSameEntryArgs(
      "serve",
      "gpu",
      "--model",
      options.modelPath,
      "--port",
      "0",
      "--data-dir",
      dataDir,
      "--slots",
      String(options.slots),
      "--context",
      String(options.contextSize),
      "--max-waiting",
      String(Math.max(64, Math.ceil(options.rate * 10))),
      "--no-sandbox",
      "--json",
    ),
    env: {
      ...options.env,
      KVGRAFT_GPU_SECRET: secret,
      KVGRAFT_WARM_START: "off",
      // cold-N: no warm tier, so a block that no slot holds comes from disk
      ...(name.startsWith("cold-") ? { KVGRAFT_WARM_BUDGET_BYTES: "0" } : {}),
    },
    ready: readyUrl,
    readyTimeoutMs: 600_000,
    stderr: log,
    ipc: true,
  });
  try {
    const url = await node.ready;
    // The client timeout bounds the measured requests only: a deposit of a ~2,000-token block or the
    // warm-up takes longer than a tight one (2,000 ms aborted every deposit on 2026-12-07).
    const client = createGpuClient({ baseUrl: url, secret, timeoutMs: SETUP_TIMEOUT_MS });
    const ids: string[] = [];
    let blockTokens = 0;
    for (const text of texts) {
      const manifest = await client.deposit(text);
      ids.push(manifest.sha256);
      blockTokens ||= manifest.tokenCount;
    }
    // Warm-up: each block grafted once (the first graft of a block pays its first restore).
    for (const id of ids) await client.graft({ blockId: id, query: query(0), maxTokens: options.maxTokens });
    const beforeText = await client.metrics();
    const before = decodeTotals(beforeText);
    const run = await openLoop(options.rate, options.durationS, async (i) => {
      // The deadline tells the node the client's patience (as the edge's calls do), so that it
      // refuses at once what it could not finish in time instead of starting it.
      const r = await client.graft(
        { blockId: ids[i % ids.length] as string, query: query(i), maxTokens: options.maxTokens },
        { deadlineMs: options.timeoutMs, signal: AbortSignal.timeout(options.timeoutMs) },
      );
      return { status: "200", tokens: r.tokensOut };
    });
    const afterText = await client.metrics();
    const after = decodeTotals(afterText);
    const [tiersBefore, tiersAfter] = [parseTierHits(beforeText), parseTierHits(afterText)];
    const steps = after.steps - before.steps;
    const batchedSteps = after.batchedSteps - before.batchedSteps;
    const phaseMs = noPhases();
    for (const phase of DECODE_PHASES)
      phaseMs[phase] = (after.batchedSeconds[phase] - before.batchedSeconds[phase]) * 1000;
    return {
      side: {
        ...summarize(run.outcomes, run.windowMs, options.rate),
        meanDecodeBatch: steps > 0 ? Number(((after.sequences - before.sequences) / steps).toFixed(2)) : 0,
        batchedSteps,
        fillersPerStep:
          batchedSteps > 0 ? Number(((after.fillers - before.fillers) / batchedSteps).toFixed(2)) : 0,
        passesPerStep:
          batchedSteps > 0 ? Number(((after.passes - before.passes) / batchedSteps).toFixed(2)) : 0,
        restoresByTier: Object.fromEntries(
          tierSchema.options.map((t) => [t, tiersAfter[t] - tiersBefore[t]]),
        ) as TierHits,
        ...stepPhaseMeans(batchedSteps, phaseMs),
      },
      blockTokens,
    };
  } finally {
    await node.stop();
    log.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Generation decode steps and their sequences (batched and native paths) from /metrics, the
 * batched path's steps and seconds by phase (kvgraft_decode_phase_seconds_total), its fillers and
 * its forward passes.
 */
function decodeTotals(metrics: string): {
  steps: number;
  sequences: number;
  batchedSteps: number;
  batchedSeconds: Record<DecodePhase, number>;
  fillers: number;
  passes: number;
} {
  let steps = 0;
  let passes = 0;
  let sequences = 0;
  let batchedSteps = 0;
  let fillers = 0;
  const batchedSeconds = noPhases();
  for (const line of metrics.split("\n")) {
    const fill = /^kvgraft_decode_fill_tokens_total (\S+)$/.exec(line);
    if (fill) fillers = Number(fill[1]);
    const pass = /^kvgraft_decode_passes_total (\S+)$/.exec(line);
    if (pass) passes = Number(pass[1]);
    const phase = /^kvgraft_decode_phase_seconds_total\{path="batched",phase="(\w+)"\} (\S+)$/.exec(line);
    if (phase && (DECODE_PHASES as readonly string[]).includes(phase[1] as string))
      batchedSeconds[phase[1] as DecodePhase] = Number(phase[2]);
    const m = /^kvgraft_decode_(steps|sequences)_total\{path="(batched|native)"\} (\S+)$/.exec(line);
    if (!m) continue;
    if (m[1] === "steps") {
      steps += Number(m[3]);
      if (m[2] === "batched") batchedSteps = Number(m[3]);
    } else sequences += Number(m[3]);
  }
  return { steps, sequences, batchedSteps, batchedSeconds, fillers, passes };
}

/** llama-server's cumulative decode and prompt counters from its Prometheus text (`--metrics`). */
function llamaServerTotals(metrics: string): {
  decodes: number;
  busySlots: number;
  promptTokens: number;
} {
  const value = (name: string) => {
    const m = new RegExp(`^llamacpp:${name} (\\S+)$`, "m").exec(metrics);
    if (!m) throw new Error(`llama-server's /metrics has no llamacpp:${name}`);
    return Number(m[1]);
  };
  const decodes = value("n_decode_total");
  // It exports the mean busy slots per llama_decode since start; times the decodes, the total.
  return {
    decodes,
    busySlots: value("n_busy_slots_per_decode") * decodes,
    promptTokens: value("prompt_tokens_total"),
  };
}

async function runLlamaServer(
  options: ServeBenchOptions,
  binary: string,
  logDir: string,
  name: string,
  texts: string[],
  query: (i: number) => string,
): Promise<ServeSide> {
  const slots = options.slots === "vram" ? 16 : options.slots;
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const log = createWriteStream(join(logDir, `llama-server-${name}.log`));
  const server = supervise({
    name: `llama-server (see ${join(logDir, `llama-server-${name}.log`)})`,
    command: binary,
    args: [
      "-m",
      options.modelPath,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--parallel",
      String(slots),
      // Its context is shared by the slots: each gets contextSize.
      "-c",
      String(options.contextSize * slots),
      "--cont-batching",
      "--metrics",
      "-fa",
      "on",
      "-ngl",
      "999",
      ...(options.llamaCacheRamMiB !== undefined ? ["--cache-ram", String(options.llamaCacheRamMiB)] : []),
      ...(options.env.KV_THREADS ? ["-t", options.env.KV_THREADS] : []),
    ],
    env: options.env,
    stderr: log,
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    const deadline = Date.now() + 600_000;
    while (true) {
      if (!server.running) throw new Error(`llama-server exited before it was ready: ${server.stderr()}`);
      const ok = await fetch(`${base}/health`)
        .then((r) => r.status === 200)
        .catch(() => false);
      if (ok) break;
      if (Date.now() > deadline) throw new Error("llama-server was not ready within 600 s");
      await new Promise((r) => setTimeout(r, 250));
    }
    const complete = async (prompt: string, timeoutMs = options.timeoutMs) => {
      const res = await fetch(`${base}/completion`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt, n_predict: options.maxTokens, temperature: 0, cache_prompt: true }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) return { status: String(res.status), tokens: 0 };
      const body = (await res.json()) as { tokens_predicted?: number };
      return { status: "200", tokens: body.tokens_predicted ?? 0 };
    };
    // Warm-up: its prompt cache is per slot, so every slot gets a prefix (hot-1: the one block in all
    // of them; warm-N: the blocks in turn), `slots` requests at once; one at a time would fill one
    // slot and leave the others' first full prompt evaluations inside the measured window.
    const warm = Math.max(slots, texts.length);
    for (let j = 0; j < warm; j += slots)
      await Promise.all(
        Array.from({ length: Math.min(slots, warm - j) }, (_, k) =>
          complete((texts[(j + k) % texts.length] as string) + query(0), SETUP_TIMEOUT_MS),
        ),
      );
    const metrics = async () => llamaServerTotals(await (await fetch(`${base}/metrics`)).text());
    const before = await metrics();
    const run = await openLoop(options.rate, options.durationS, (i) =>
      complete((texts[i % texts.length] as string) + query(i)),
    );
    const after = await metrics();
    const side = summarize(run.outcomes, run.windowMs, options.rate);
    const decodes = after.decodes - before.decodes;
    return {
      ...side,
      meanDecodeBatch: decodes > 0 ? Number(((after.busySlots - before.busySlots) / decodes).toFixed(2)) : 0,
      promptTokensPerRequest:
        side.ok > 0 ? Number(((after.promptTokens - before.promptTokens) / side.ok).toFixed(1)) : 0,
    };
  } finally {
    await server.stop();
    log.end();
  }
}
