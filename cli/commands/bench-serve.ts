/** `kvgraft bench serve` (kvgraft's GPU node against llama-server) and `kvgraft bench batches` (decode batch sizes). */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { intFlag, requireGgufFile, UsageError } from "../args.js";
import { command, engineSettings } from "../command.js";
import { inheritedEnv } from "../config.js";

export const SERVE_HELP = `usage: kvgraft bench serve --model FILE (--llama-server BIN | --only kvgraft)
         [--workloads hot-1,warm-12] [--rate 32] [--duration 20] [--max-tokens 16] [--slots 8|vram]
         [--context 4096] [--block-chars 4000] [--timeout-ms 30000] [--llama-cache-ram MIB] [--log-dir DIR]
         [--out FILE.json] [--json]

kvgraft's GPU node (a \`kvgraft serve gpu\` child) and llama.cpp's own server (\`llama-server\`, the
--llama-server binary: build it from node-llama-cpp's bundled llama.cpp, docs/benchmarks.md says
how) on the same model file, slots (--parallel), context per slot and open-loop arrivals: each
workload's blocks deposited on the node (their texts are llama-server's prompt prefixes, kept by
its prompt cache), then --rate requests a second for --duration seconds, each latency from its due
time. hot-1: one block for every request; warm-N: N blocks in turn; cold-N: the same with kvgraft's
warm tier off (KVGRAFT_WARM_BUDGET_BYTES=0), so a block no slot holds is read from disk (for
llama-server, which has no tiers, it is warm-N). Greedy, --max-tokens each.
--block-chars sets each block's text length; the result reports the tokens it made (blockTokens).
--timeout-ms is both clients' patience with a measured request (kvgraft's requests carry it as
their deadline); a request past it counts as a timeout. The deposits and warm-up before the window
wait up to 600 s.
--llama-cache-ram passes llama-server's --cache-ram (its host-memory prompt cache, MiB; 0 turns it
off; default: llama-server's own), which saves a slot's whole state before the slot takes a new prompt.
Per workload and server: throughput, p50/p99 of the answered requests, generated tokens a second,
the mean decode batch (kvgraft's generation steps; llama-server's busy slots per llama_decode, from
its --metrics) and, for llama-server, the prompt tokens it evaluated per request; for kvgraft, where
a batched step's wall time went (gapMsPerStep, lockMsPerStep, prepareMsPerStep, decodeMsPerStep,
sampleMsPerStep) and which tier served the window's restores (restoresByTier). --out writes
{workloads: [{name, kvgraft: {...}, llamaServer: {...}}]}. --log-dir keeps both servers' logs there
(default: a new temporary directory, named in errors). Without a llama-server binary it refuses
unless --only kvgraft.
Environment: KV_LLAMA=cpu|lastBuild|auto and KV_THREADS (both servers: -t), CUDA_VISIBLE_DEVICES.`;

export const BATCHES_HELP = `usage: kvgraft bench batches --model FILE [--slots 8|vram] [--clients 8] [--rounds 4]
         [--max-tokens 32] [--workload hot-1|distinct] [--context 2048] [--block-tokens 200] [--json]

In process: --clients concurrent grafts (closed loop, --rounds each) of one block (hot-1) or of one
block per client (distinct), blocks of --block-tokens random tokens, and what every llama_decode carried meanwhile: sequences per decode by
path (batched: the batch loop; native: a lone greedy step; library: node-llama-cpp's queue), the
mean batch of the generation steps, grafts and tokens a second, process CPU ms per token, where a
batched step's wall time went (gapMsPerStep: between steps; lock; prepare: building the batch;
decode: llama_decode; sample: every member's sampling) and the context (flash attention, KV type,
cells, node-llama-cpp's memory estimate), and the grafts' restores by tier (restores: {hits, msSum}).
Environment: KV_LLAMA=cpu|lastBuild|auto, KV_THREADS.`;

const slotsFlag = (value: string | undefined, fallback: number): number | "vram" =>
  value === "vram" ? "vram" : intFlag(value, "slots", fallback, 1);

export const benchServeCommand = command(
  {
    help: SERVE_HELP,
    flags: {
      model: { type: "string" },
      "llama-server": { type: "string" },
      only: { type: "string" },
      workloads: { type: "string", default: "hot-1,warm-12" },
      rate: { type: "string" },
      duration: { type: "string" },
      "max-tokens": { type: "string" },
      slots: { type: "string" },
      context: { type: "string" },
      "block-chars": { type: "string" },
      "timeout-ms": { type: "string" },
      "llama-cache-ram": { type: "string" },
      "log-dir": { type: "string" },
      out: { type: "string" },
    },
  },
  async (flags, output) => {
    if (!flags.model) throw new UsageError("--model FILE is required");
    const modelPath = requireGgufFile(flags.model, "--model");
    if (flags.only !== undefined && flags.only !== "kvgraft") throw new UsageError("--only takes kvgraft");
    // --only kvgraft wins over a --llama-server given beside it (gpu-round.sh passes both).
    const llamaServer = flags.only === "kvgraft" ? null : (flags["llama-server"] ?? null);
    if (llamaServer === null && flags.only !== "kvgraft")
      throw new UsageError(
        "--llama-server BIN is required: the peer is llama.cpp's llama-server, built from node-llama-cpp's bundled " +
          "llama.cpp (docs/benchmarks.md, 'Serving'); --only kvgraft runs kvgraft's side alone",
      );
    if (llamaServer !== null && !existsSync(llamaServer))
      throw new UsageError(`--llama-server ${llamaServer}: no such file`);
    const { benchServe, workloadBlocks } = await import("../../bench/serve-bench.js");
    const workloads = String(flags.workloads).split(",");
    for (const w of workloads) {
      try {
        workloadBlocks(w);
      } catch (err) {
        throw new UsageError(`--workloads: ${(err as Error).message}`);
      }
    }
    const { threads } = engineSettings();
    const result = await benchServe({
      modelPath,
      llamaServer,
      workloads,
      rate: intFlag(flags.rate, "rate", 32, 1),
      durationS: intFlag(flags.duration, "duration", 20, 1),
      maxTokens: intFlag(flags["max-tokens"], "max-tokens", 16, 1),
      slots: slotsFlag(flags.slots, 8),
      contextSize: intFlag(flags.context, "context", 4096, 64),
      blockChars: intFlag(flags["block-chars"], "block-chars", 4000, 1),
      timeoutMs: intFlag(flags["timeout-ms"], "timeout-ms", 30_000, 1),
      ...(flags["llama-cache-ram"] !== undefined
        ? { llamaCacheRamMiB: intFlag(flags["llama-cache-ram"], "llama-cache-ram", 0, 0) }
        : {}),
      ...(flags["log-dir"] ? { logDir: flags["log-dir"] } : {}),
      env: { ...inheritedEnv(), ...(threads ? { KV_THREADS: String(threads) } : {}) },
      onProgress: output.progress,
    });
    const cell = (s: { throughputRps: number; p99Ms: number; tokensPerS: number } | null) =>
      s ? `${s.throughputRps} | ${s.p99Ms} | ${s.tokensPerS}` : "- | - | -";
    process.stdout.write(
      "| workload | kvgraft req/s | p99 ms | tokens/s | decode batch | llama-server req/s | p99 ms | tokens/s | decode batch | prompt tokens/req |\n" +
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" +
        result.workloads
          .map(
            (w) =>
              `| ${w.name} | ${cell(w.kvgraft)} | ${w.kvgraft.meanDecodeBatch ?? "-"} | ${cell(w.llamaServer)} | ` +
              `${w.llamaServer?.meanDecodeBatch ?? "-"} | ${w.llamaServer?.promptTokensPerRequest ?? "-"} |`,
          )
          .join("\n") +
        "\n",
    );
    if (flags.out) {
      mkdirSync(dirname(flags.out), { recursive: true });
      writeFileSync(flags.out, `${JSON.stringify(result, null, 2)}\n`);
    }
    output.result(result);
    return result.workloads.every((w) => w.kvgraft.ok > 0 && (w.llamaServer === null || w.llamaServer.ok > 0))
      ? 0
      : 1;
  },
);

export const benchBatchesCommand = command(
  {
    help: BATCHES_HELP,
    flags: {
      model: { type: "string" },
      slots: { type: "string" },
      clients: { type: "string" },
      rounds: { type: "string" },
      "max-tokens": { type: "string" },
      workload: { type: "string", default: "hot-1" },
      context: { type: "string" },
      "block-tokens": { type: "string" },
    },
  },
  async (flags, output) => {
    if (!flags.model) throw new UsageError("--model FILE is required");
    if (flags.workload !== "hot-1" && flags.workload !== "distinct")
      throw new UsageError("--workload must be hot-1 or distinct");
    const { benchDecodeBatches } = await import("../../bench/decode-batches.js");
    const result = await benchDecodeBatches({
      modelPath: requireGgufFile(flags.model, "--model"),
      slots: slotsFlag(flags.slots, 8),
      clients: intFlag(flags.clients, "clients", 8, 1),
      rounds: intFlag(flags.rounds, "rounds", 4, 1),
      maxTokens: intFlag(flags["max-tokens"], "max-tokens", 32, 1),
      workload: flags.workload,
      contextSize: intFlag(flags.context, "context", 2048, 64),
      blockTokens: intFlag(flags["block-tokens"], "block-tokens", 200, 1),
      ...engineSettings(),
    });
    if (output.json) output.result(result);
    else {
      const sizes = (path: keyof typeof result.decodes) =>
        Object.entries(result.decodes[path].bySequences)
          .map(([k, v]) => `${k}x${v}`)
          .join(" ") || "-";
      process.stdout.write(
        `${result.workload}: ${result.grafts} grafts on ${result.slots} slots by ${result.clients} clients, ` +
          `${result.graftsPerS} grafts/s, ${result.tokensPerS} tokens/s, ${result.cpuMsPerToken} CPU ms/token, ` +
          `mean decode batch ${result.meanBatch} (batched ${sizes("batched")}; native ${sizes("native")}; ` +
          `library ${sizes("library")}); outputs agree: ${result.outputsAgree}; batched step ms: ` +
          `gap ${result.gapMsPerStep}, lock ${result.lockMsPerStep}, prepare ${result.prepareMsPerStep}, ` +
          `decode ${result.decodeMsPerStep}, sample ${result.sampleMsPerStep}; restores hot ` +
          `${result.restores.hits.hot}, warm ${result.restores.hits.warm}, cold ${result.restores.hits.cold}\n`,
      );
    }
    return 0;
  },
);
