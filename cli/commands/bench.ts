import { createRequire } from "node:module";
import { join } from "node:path";
import { benchBucketServe } from "../../bench/bucket-serve.js";
import { benchGraft, graftBenchTable } from "../../bench/graft-bench.js";
import { benchHttpOverhead } from "../../bench/http-overhead.js";
import { benchLibrary } from "../../bench/library-bench.js";
import { benchRouter, type SetOutcome } from "../../bench/router-bench.js";
import { benchSandbox, sandboxBenchTable } from "../../bench/sandbox-bench.js";
import type { KvType } from "../../gpu-node/engine/engine.js";
import { intFlag, intListFlag, requireFlag, requireGgufFile, UsageError, UserError } from "../args.js";
import { command, engineSettings } from "../command.js";
import { inheritedEnv, readToolEnv } from "../config.js";
import { benchScaleOutCommand, SCALE_OUT_HELP } from "./bench-scale-out.js";
import { BATCHES_HELP, benchBatchesCommand, benchServeCommand, SERVE_HELP } from "./bench-serve.js";

/** Each benchmark's usage and description (`kvgraft bench <name> --help`). */
const BENCH_HELP = {
  graft: `usage: kvgraft bench graft --model FILE [--lengths 748,5977,11994] [--kv f16,q8_0] [--runs 5]
         [--swa-full-cache true|false] [--data-dir DIR] [--energy-seconds S] [--json]

Recompute (prefill + 1 token) vs hot graft, warm restore (RAM) and cold restore (disk,
hash-checked, page cache dropped where permitted), medians after a warm-up, probability hashes
compared on every path.
--swa-full-cache (default true) matters only for sliding-window models (gemma3): false keeps only the
window's cells for the sliding-window layers, in VRAM and in the saved state (see docs/benchmarks.md).
--energy-seconds S repeats recompute, hot and warm requests for S seconds each while sampling GPU
power with nvidia-smi every 50 ms, and reports Wh per request.
Environment: KV_LLAMA=cpu|lastBuild|auto, KV_THREADS.`,
  library: `usage: kvgraft bench library --model FILE --blocks N --block-tokens T --depths d1,d2,... [--accesses 3]
         [--kv q8_0] [--data-dir DIR] [--json]

Deposits N blocks of T tokens (resumable in --data-dir, default .data/bench-library), then accesses
blocks at the given token depths in random order, cold (page cache dropped) and warm (RAM tier),
each access checking the probe hash; per-depth median and p95, bytes on disk, VRAM baseline and peak.
Environment: KV_LLAMA=cpu|lastBuild|auto, KV_THREADS.`,
  http: `usage: kvgraft bench http --model FILE [--runs 10] [--context 4096] [--json]

The same deposit and hot graft in-process and over loopback HTTP (signed GPU node): output hashes
compared, median latency of each and the difference. Environment: KV_LLAMA=cpu|lastBuild|auto.`,
  router: `usage: kvgraft bench router [--problems 10000] [--rounds 5] [--json]

A libSQL file library of N generated problems (tools/router-library.ts), the tuning and
re-wording queries routed after a warm-up (routeProblem, the decision /v1/solve makes);
p50/p95/p99 of the router and each set's outcome.`,
  edge: `usage: kvgraft bench edge --rate R[,R2,...] [--duration 10] [--path fast|graft] [--url URL --key KEY]
         [--stack start|serve] [--data-dir DIR] [--max-tokens 4] [--timeout-ms 30000] [--json]

Open-loop load through the edge at a constant arrival rate (each rate in turn), fast path (a
verified library answer) or graft path (a block grafted on the GPU node): throughput, p50/p95/p99
latency from each request's due time, error rate, status and error codes, health afterwards.
Without --url it runs \`kvgraft start\` itself (fresh data directory, tiny model), or with
--stack serve \`kvgraft serve gpu\` + \`kvgraft serve edge\` (no starter library, no flywheel worker).
With --url, the key is --key, else KVGRAFT_API_KEY or KVGRAFT_ADMIN_KEY. See docs/reliability.md.`,
  "scale-out": SCALE_OUT_HELP,
  serve: SERVE_HELP,
  batches: BATCHES_HELP,
  bucket: `usage: kvgraft bench bucket --model FILE [--tokens 1000] [--kv f16] [--runs 3] [--parallel 4]
         [--warm-budget-bytes 2147483648] [--data-dir DIR] [--s3rver-dir DIR] [--untagged] [--json]

A graft of a block from the node's own disk (local cold restore: page cache dropped, checked read,
load) versus a graft of the same block fetched from a bucket (s3rver on loopback, its own process),
its files in the page cache and not; one node (BlockService), medians after a warm-up. restoreMs
runs from the graft's start until the slot holds the block. The issue's target: blocks >= 256 MiB.
--s3rver-dir: a folder whose node_modules has s3rver (scripts/stage-s3rver.sh); default the current
folder. --data-dir: a fresh folder is made in it for the node's store and s3rver's files.
The node tags its manifests as one with KVGRAFT_GPU_SECRET does (a fetch serves once every chunk
matched, the whole state's SHA-256 checked before the disk commit); --untagged: without a secret
(the whole state is hashed before the block is served).
Environment: KV_LLAMA=cpu|lastBuild|auto, KV_THREADS. See docs/deploy-r2.md.`,
  "fast-path": `usage: kvgraft bench fast-path [--requests 1000] [--warmup 100] [--json]

Sequential solves of one verified library problem over loopback HTTP (a Node edge with a fresh
libSQL file, a stand-in GPU node that must get no request): round-trip and edge-reported p50/p99,
requests per second.`,
  sandbox: `usage: kvgraft bench sandbox [--backends wasm,bwrap] [--rounds 5] [--concurrency 2] [--sustain 10] [--json]

The starter library's 12 programs, each on its problem's numbers, on a warm sandbox pool: verdict
latency p50/p99 one program at a time, then programs per second sustained with --concurrency in
flight for --sustain seconds; one row per backend (a backend that cannot start here is an error).`,
} as const;

const HELP = Object.values(BENCH_HELP).join("\n\n");

/** `kvgraft bench <graft|library|http|router|edge|scale-out|fast-path|bucket|sandbox|serve|batches>`. */
export default async function bench(argv: string[]): Promise<number> {
  const [which, ...rest] = argv;
  if (!which || which === "--help" || which === "-h") {
    (which ? process.stdout : process.stderr).write(`${HELP}\n`);
    return which ? 0 : 2;
  }
  if (which === "http") return benchHttp(rest);
  if (which === "edge") return benchEdgeCommand(rest);
  if (which === "scale-out") return benchScaleOutCommand(rest);
  if (which === "library") return benchLibraryCommand(rest);
  if (which === "router") return benchRouterCommand(rest);
  if (which === "fast-path") return benchFastPathCommand(rest);
  if (which === "bucket") return benchBucketCommand(rest);
  if (which === "sandbox") return benchSandboxCommand(rest);
  if (which === "serve") return benchServeCommand(rest);
  if (which === "batches") return benchBatchesCommand(rest);
  if (which !== "graft")
    throw new UsageError(
      `unknown benchmark '${which}' (available: graft, library, http, router, edge, scale-out, fast-path, bucket, sandbox, serve, batches)`,
    );
  return benchGraftCommand(rest);
}

const benchGraftCommand = command(
  {
    help: BENCH_HELP.graft,
    flags: {
      model: { type: "string" },
      lengths: { type: "string" },
      kv: { type: "string", default: "f16" },
      runs: { type: "string" },
      "swa-full-cache": { type: "string", default: "true" },
      "data-dir": { type: "string" },
      "energy-seconds": { type: "string" },
    },
  },
  async (flags, out) => {
    const kvTypes = String(flags.kv).split(",") as KvType[];
    if (kvTypes.some((k) => k !== "f16" && k !== "q8_0")) throw new UsageError("--kv takes f16 and/or q8_0");
    const lengths = intListFlag(flags.lengths, "lengths", [748, 5977, 11994]);
    if (lengths.some((l) => l < 1)) throw new UsageError("--lengths must be positive integers");
    if (flags["swa-full-cache"] !== "true" && flags["swa-full-cache"] !== "false")
      throw new UsageError("--swa-full-cache must be true or false");
    const result = await benchGraft({
      modelPath: requireGgufFile(requireFlag(flags.model, "model"), "--model"),
      lengths,
      kvTypes,
      runs: intFlag(flags.runs, "runs", 5),
      energySeconds: intFlag(flags["energy-seconds"], "energy-seconds", 0, 0),
      engine: { ...engineSettings(), swaFullCache: flags["swa-full-cache"] === "true" },
      ...(flags["data-dir"] ? { dataDir: flags["data-dir"] } : {}),
      log: out.progress,
    });
    process.stdout.write(`${graftBenchTable(result.rows)}\n`);
    out.result({ model: result.model, engine: result.engine, results: result.rows });
    return result.rows.every((r) => r.hashesEqual) ? 0 : 1;
  },
);

const benchBucketCommand = command(
  {
    help: BENCH_HELP.bucket,
    flags: {
      model: { type: "string" },
      tokens: { type: "string" },
      kv: { type: "string", default: "f16" },
      runs: { type: "string" },
      parallel: { type: "string" },
      "warm-budget-bytes": { type: "string" },
      "data-dir": { type: "string" },
      "s3rver-dir": { type: "string" },
      untagged: { type: "boolean", default: false },
    },
  },
  async (flags, out) => {
    if (flags.kv !== "f16" && flags.kv !== "q8_0") throw new UsageError("--kv must be f16 or q8_0");
    const s3rverDir = String(flags["s3rver-dir"] ?? process.cwd());
    try {
      createRequire(join(s3rverDir, "package.json")).resolve("s3rver");
    } catch {
      throw new UserError(
        `s3rver cannot be loaded from ${s3rverDir}: stage it there (scripts/stage-s3rver.sh DIR)`,
      );
    }
    const result = await benchBucketServe({
      modelPath: requireGgufFile(requireFlag(flags.model, "model"), "--model"),
      tokens: intFlag(flags.tokens, "tokens", 1000),
      kv: flags.kv,
      runs: intFlag(flags.runs, "runs", 3),
      parallel: intFlag(flags.parallel, "parallel", 4),
      warmBudgetBytes: intFlag(flags["warm-budget-bytes"], "warm-budget-bytes", 2 * 2 ** 30),
      ...(flags["data-dir"] ? { dataDir: String(flags["data-dir"]) } : {}),
      s3rverDir,
      taggedManifests: !flags.untagged,
      engine: engineSettings(),
      log: out.progress,
    });
    const m = result.medians;
    process.stdout.write(
      `${(result.stateBytes / 2 ** 20).toFixed(1)} MiB block, ${result.statePath} path, ${result.runs} runs: ` +
        `local cold ${m.local.restoreMs.toFixed(1)} ms, bucket (server cache warm) ${m.bucketServerWarm.restoreMs.toFixed(1)} ms ` +
        `(${result.vsLocal.bucketServerWarm}x local), bucket (server cache cold) ${m.bucketServerCold.restoreMs.toFixed(1)} ms ` +
        `(${result.vsLocal.bucketServerCold}x local)${result.meetsMinimumSize ? "" : "; below the target's 256 MiB"}\n`,
    );
    out.result(result);
    return 0;
  },
);

const benchHttp = command(
  {
    help: BENCH_HELP.http,
    flags: {
      model: { type: "string" },
      runs: { type: "string" },
      context: { type: "string" },
    },
  },
  async (flags, out) => {
    const result = await benchHttpOverhead({
      modelPath: requireGgufFile(requireFlag(flags.model, "model"), "--model"),
      binary: engineSettings().binary,
      runs: intFlag(flags.runs, "runs", 10),
      contextSize: intFlag(flags.context, "context", 4096),
    });
    process.stdout.write(
      `hot graft in-process ${result.inProcess.medianMs.toFixed(2)} ms, over HTTP ${result.http.medianMs.toFixed(2)} ms ` +
        `(+${result.overheadMs.toFixed(2)} ms); output hashes ${result.hashesEqual ? "equal" : "DIFFERENT"}\n`,
    );
    out.result(result);
    return result.hashesEqual ? 0 : 1;
  },
);

const benchLibraryCommand = command(
  {
    help: BENCH_HELP.library,
    flags: {
      model: { type: "string" },
      blocks: { type: "string" },
      "block-tokens": { type: "string" },
      depths: { type: "string" },
      accesses: { type: "string" },
      kv: { type: "string", default: "q8_0" },
      "data-dir": { type: "string", default: ".data/bench-library" },
    },
  },
  async (flags, out) => {
    if (flags.kv !== "f16" && flags.kv !== "q8_0") throw new UsageError("--kv must be f16 or q8_0");
    const blocks = intFlag(flags.blocks, "blocks", 8);
    const blockTokens = intFlag(flags["block-tokens"], "block-tokens", 1024);
    const depths = intListFlag(flags.depths, "depths", [
      0,
      Math.floor((blocks * blockTokens) / 2),
      blocks * blockTokens - 1,
    ]);
    if (depths.some((d) => d >= blocks * blockTokens))
      throw new UsageError(`every depth must be below the library's ${blocks * blockTokens} tokens`);
    const result = await benchLibrary({
      modelPath: requireGgufFile(requireFlag(flags.model, "model"), "--model"),
      blocks,
      blockTokens,
      depths,
      accesses: intFlag(flags.accesses, "accesses", 3),
      kv: flags.kv,
      dataDir: String(flags["data-dir"]),
      engine: engineSettings(),
      log: out.progress,
    });
    process.stdout.write(
      `library: ${result.blocks} blocks, ${result.libraryTokens.toLocaleString("en-US")} tokens, ${(result.bytesOnDisk / 1e9).toFixed(2)} GB on disk\n` +
        "| depth | block | cold median ms | cold p95 ms | warm median ms | warm p95 ms |\n|---:|---:|---:|---:|---:|---:|\n" +
        result.depths
          .map(
            (d) =>
              `| ${d.depth} | ${d.block} | ${d.coldMedianMs.toFixed(1)} | ${d.coldP95Ms.toFixed(1)} | ${d.warmMedianMs.toFixed(1)} | ${d.warmP95Ms.toFixed(1)} |`,
          )
          .join("\n") +
        "\n",
    );
    out.result(result);
    return result.allProbesEqual ? 0 : 1;
  },
);

const benchRouterCommand = command(
  {
    help: BENCH_HELP.router,
    flags: {
      problems: { type: "string" },
      rounds: { type: "string" },
    },
  },
  async (flags, out) => {
    const result = await benchRouter({
      problems: intFlag(flags.problems, "problems", 10_000, 40),
      rounds: intFlag(flags.rounds, "rounds", 5),
      log: out.progress,
    });
    const set = (name: string, s: SetOutcome) =>
      `${name}: ${s.inLibraryCorrect}/${s.inLibrary} in library, ${s.abstained}/${s.outOfLibrary} abstained, ` +
      `${s.wrongRoutes} wrong routes`;
    process.stdout.write(
      `router over ${result.problems} problems: p50 ${result.p50Ms} ms, p95 ${result.p95Ms} ms, p99 ${result.p99Ms} ms ` +
        `(${result.samples} routes; lexical step p50 ${result.lexical.p50Ms} ms, p99 ${result.lexical.p99Ms} ms); ` +
        `${set("tuning set", result.sets.tuning)}; ${set("re-wordings", result.sets.rewordings)}\n`,
    );
    out.result(result);
    return 0;
  },
);

const benchFastPathCommand = command(
  {
    help: BENCH_HELP["fast-path"],
    flags: {
      requests: { type: "string" },
      warmup: { type: "string" },
    },
  },
  async (flags, out) => {
    const { benchFastPath, fastPathText } = await import("../../bench/fast-path-bench.js");
    const result = await benchFastPath({
      requests: intFlag(flags.requests, "requests", 1000),
      warmup: intFlag(flags.warmup, "warmup", 100, 0),
    });
    if (out.json) out.result(result);
    else process.stdout.write(fastPathText(result));
    return 0;
  },
);

const benchEdgeCommand = command(
  {
    help: BENCH_HELP.edge,
    flags: {
      rate: { type: "string" },
      duration: { type: "string" },
      path: { type: "string", default: "fast" },
      url: { type: "string" },
      key: { type: "string" },
      "data-dir": { type: "string" },
      stack: { type: "string", default: "start" },
      "max-tokens": { type: "string" },
      "timeout-ms": { type: "string" },
    },
  },
  async (flags, out) => {
    if (flags.path !== "fast" && flags.path !== "graft") throw new UsageError("--path must be fast or graft");
    if (flags.stack !== "start" && flags.stack !== "serve")
      throw new UsageError("--stack must be start or serve");
    const rates = intListFlag(requireFlag(flags.rate, "rate"), "rate", []);
    if (rates.length === 0 || rates.some((r) => r < 1))
      throw new UsageError("--rate takes positive integers");
    const env = readToolEnv();
    const key = flags.key ?? env.apiKey ?? env.adminKey;
    const { benchEdge, loadLine } = await import("../../bench/load-bench.js");
    const result = await benchEdge({
      path: flags.path,
      stack: flags.stack,
      rates,
      durationS: intFlag(flags.duration, "duration", 10),
      timeoutMs: intFlag(flags["timeout-ms"], "timeout-ms", 30_000),
      maxTokens: intFlag(flags["max-tokens"], "max-tokens", 4),
      ...(flags.url ? { url: flags.url } : {}),
      ...(key ? { key } : {}),
      ...(flags["data-dir"] ? { dataDir: flags["data-dir"] } : {}),
      env: inheritedEnv(),
      log: out.progress,
    });
    for (const r of result.runs) process.stdout.write(`${loadLine(r)}\n`);
    out.result(result);
    // Nothing may crash: the edge answers /health after every run (and exits 0 when started here).
    const healthy = result.runs.every((r) => r.healthAfter.status === 200);
    return healthy && (result.edge.exitCode ?? 0) === 0 ? 0 : 1;
  },
);

const benchSandboxCommand = command(
  {
    help: BENCH_HELP.sandbox,
    flags: {
      backends: { type: "string", default: "wasm,bwrap" },
      rounds: { type: "string" },
      concurrency: { type: "string" },
      sustain: { type: "string" },
    },
  },
  async (flags, out) => {
    const backends = String(flags.backends).split(",");
    if (!backends.every((b): b is "wasm" | "bwrap" => b === "wasm" || b === "bwrap"))
      throw new UsageError("--backends takes wasm and/or bwrap");
    const rows = await benchSandbox({
      backends,
      rounds: intFlag(flags.rounds, "rounds", 5),
      concurrency: intFlag(flags.concurrency, "concurrency", 2),
      sustainS: intFlag(flags.sustain, "sustain", 10),
      log: out.progress,
    });
    process.stdout.write(`${sandboxBenchTable(rows)}\n`);
    out.result(rows);
    return rows.every((r) => r.failures === 0) ? 0 : 1;
  },
);
