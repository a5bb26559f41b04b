import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { readGpuEnv } from "../../gpu-node/config.js";
import { type GpuNodeConfig, gpuNodeConfigSchema, startGpuNode } from "../../gpu-node/server/node.js";
import { intFlag, parseFlags, printJson, UsageError } from "../args.js";

const HELP = `usage: kvgraft serve gpu --model FILE [--port 8788] [--host 127.0.0.1] [--data-dir DIR]
         [--slots 2] [--context 4096] [--kv f16|q8_0] [--max-waiting N] [--drain-timeout-ms 30000]
         [--no-sandbox] [--json]
       kvgraft serve edge [flags]   (see kvgraft serve edge --help)

serve gpu runs the GPU node: one model, a block store in --data-dir (default .data/gpu), the
signed HTTP API on loopback by default. It prints the URL once ready (--json: a JSON line
{url, model, engine}). SIGTERM or SIGINT drains: new work is refused with 503, running requests
finish (or are aborted after the drain timeout), then it exits 0. Bad configuration exits 2.
Environment: KVGRAFT_GPU_SECRET (required, >= 16 characters), MODEL_PATH (when --model is absent),
KV_LLAMA=cpu|lastBuild|auto, KV_THREADS, KVGRAFT_ACCESS_AUD + KVGRAFT_ACCESS_TEAM_DOMAIN (require
a Cloudflare Access JWT on every signed route).`;

/** `kvgraft serve gpu|edge`. */
export default async function serve(argv: string[]): Promise<number> {
  const [target, ...rest] = argv;
  if (target === "edge") {
    const edge = (await import("../../edge/node.js")) as { serveEdge: (argv: string[]) => Promise<number> };
    return edge.serveEdge(rest);
  }
  if (target === "gpu") return serveGpu(rest);
  if (target === "--help" || target === "-h") {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  throw new UsageError(`expected 'serve gpu' or 'serve edge', got ${target ? `'${target}'` : "nothing"}`);
}

async function serveGpu(argv: string[]): Promise<number> {
  const flags = parseFlags(argv, {
    model: { type: "string" },
    port: { type: "string" },
    host: { type: "string" },
    "data-dir": { type: "string" },
    slots: { type: "string" },
    context: { type: "string" },
    kv: { type: "string" },
    "max-waiting": { type: "string" },
    "drain-timeout-ms": { type: "string" },
    "no-sandbox": { type: "boolean", default: false },
    json: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  });
  if (flags.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  let config: GpuNodeConfig;
  try {
    const env = readGpuEnv();
    const input: GpuNodeConfig = {
      modelPath: flags.model ?? env.MODEL_PATH ?? "",
      dataDir: resolve(flags["data-dir"] ?? ".data/gpu"),
      secret: env.KVGRAFT_GPU_SECRET as string,
      binary: env.KV_LLAMA,
      sandbox: !flags["no-sandbox"],
      ...(flags.host !== undefined ? { host: flags.host } : {}),
      ...(flags.port !== undefined ? { port: intFlag(flags.port, "port", 0, 0) } : {}),
      ...(flags.slots !== undefined ? { slots: intFlag(flags.slots, "slots", 2) } : {}),
      ...(flags.context !== undefined ? { contextSize: intFlag(flags.context, "context", 4096) } : {}),
      ...(flags.kv !== undefined ? { kvType: flags.kv as "f16" } : {}),
      ...(flags["max-waiting"] !== undefined
        ? { maxWaiting: intFlag(flags["max-waiting"], "max-waiting", 0, 0) }
        : {}),
      ...(flags["drain-timeout-ms"] !== undefined
        ? { drainTimeoutMs: intFlag(flags["drain-timeout-ms"], "drain-timeout-ms", 0, 0) }
        : {}),
      ...(env.KV_THREADS ? { threads: env.KV_THREADS } : {}),
      ...(env.KVGRAFT_ACCESS_AUD || env.KVGRAFT_ACCESS_TEAM_DOMAIN
        ? {
            access: {
              audience: env.KVGRAFT_ACCESS_AUD ?? "",
              teamDomain: env.KVGRAFT_ACCESS_TEAM_DOMAIN ?? "",
            },
          }
        : {}),
    };
    if (!input.modelPath) throw new UsageError("--model FILE (or MODEL_PATH) is required");
    if (!existsSync(input.modelPath)) throw new UsageError(`model file not found: ${input.modelPath}`);
    const parsed = gpuNodeConfigSchema.safeParse(input);
    if (!parsed.success)
      throw new UsageError(
        `invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`).join("; ")}`,
      );
    config = input;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError((err as Error).message);
  }

  const node = await startGpuNode(config);
  process.stdout.write(
    `kvgraft gpu node listening on ${node.url} (model ${node.engine.modelFingerprint.name || config.modelPath})\n`,
  );
  if (flags.json)
    printJson({ url: node.url, model: node.engine.modelFingerprint, engine: node.engine.engineFingerprint });

  await new Promise<void>((done) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.stderr.write(`${signal}: draining\n`);
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      // A second signal during the drain stops at once.
      process.once("SIGTERM", () => process.exit(1));
      process.once("SIGINT", () => process.exit(1));
      node.stop().then(done, (err: Error) => {
        process.stderr.write(`shutdown failed: ${err.stack ?? err.message}\n`);
        process.exit(1);
      });
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
  process.stderr.write("stopped\n");
  return 0;
}
