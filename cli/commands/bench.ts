import { benchGraft, graftBenchTable } from "../../gpu-node/bench/graft-bench.js";
import { benchHttpOverhead } from "../../gpu-node/bench/http-overhead.js";
import { readGpuEnv } from "../../gpu-node/config.js";
import type { KvType } from "../../gpu-node/engine/engine.js";
import { intFlag, intListFlag, parseFlags, printJson, requireFlag, UsageError } from "../args.js";

const HELP = `usage: kvgraft bench graft --model FILE [--lengths 748,5977,11994] [--kv f16,q8_0] [--runs 5]
         [--data-dir DIR] [--json]
       kvgraft bench http --model FILE [--runs 10] [--context 4096] [--json]

bench graft: recompute (prefill + 1 token) vs hot graft, warm restore (RAM) and cold restore (disk,
hash-checked, page cache dropped where permitted), medians after a warm-up, probability hashes
compared on every path.
bench http: the same deposit and hot graft in-process and over loopback HTTP (signed GPU node):
output hashes compared, median latency of each and the difference. Environment: KV_LLAMA=cpu|lastBuild|auto.`;

/** `kvgraft bench <graft|library|edge>`. */
export default async function bench(argv: string[]): Promise<number> {
  const [which, ...rest] = argv;
  if (!which || which === "--help" || which === "-h") {
    process.stdout.write(`${HELP}\n`);
    return which ? 0 : 2;
  }
  if (which === "http") return benchHttp(rest);
  if (which !== "graft") throw new UsageError(`unknown benchmark '${which}' (available: graft, http)`);
  const flags = parseFlags(rest, {
    model: { type: "string" },
    lengths: { type: "string" },
    kv: { type: "string", default: "f16" },
    runs: { type: "string" },
    "data-dir": { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  });
  if (flags.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const kvTypes = String(flags.kv).split(",") as KvType[];
  if (kvTypes.some((k) => k !== "f16" && k !== "q8_0")) throw new UsageError("--kv takes f16 and/or q8_0");
  const lengths = intListFlag(flags.lengths, "lengths", [748, 5977, 11994]);
  if (lengths.some((l) => l < 1)) throw new UsageError("--lengths must be positive integers");
  const env = readGpuEnv();
  const result = await benchGraft({
    modelPath: requireFlag(flags.model, "model"),
    lengths,
    kvTypes,
    runs: intFlag(flags.runs, "runs", 5),
    engine: { binary: env.KV_LLAMA, ...(env.KV_THREADS ? { threads: env.KV_THREADS } : {}) },
    ...(flags["data-dir"] ? { dataDir: flags["data-dir"] } : {}),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${graftBenchTable(result.rows)}\n`);
  if (flags.json) printJson({ model: result.model, engine: result.engine, results: result.rows });
  return result.rows.every((r) => r.hashesEqual) ? 0 : 1;
}

async function benchHttp(argv: string[]): Promise<number> {
  const flags = parseFlags(argv, {
    model: { type: "string" },
    runs: { type: "string" },
    context: { type: "string" },
    json: { type: "boolean", default: false },
  });
  const env = readGpuEnv();
  const result = await benchHttpOverhead({
    modelPath: requireFlag(flags.model, "model"),
    binary: env.KV_LLAMA,
    runs: intFlag(flags.runs, "runs", 10),
    contextSize: intFlag(flags.context, "context", 4096),
  });
  process.stdout.write(
    `hot graft in-process ${result.inProcess.medianMs.toFixed(2)} ms, over HTTP ${result.http.medianMs.toFixed(2)} ms ` +
      `(+${result.overheadMs.toFixed(2)} ms); output hashes ${result.hashesEqual ? "equal" : "DIFFERENT"}\n`,
  );
  if (flags.json) printJson(result);
  return result.hashesEqual ? 0 : 1;
}
