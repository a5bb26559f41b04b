import { resolve } from "node:path";
import { type GpuNodeInput, resolveGpuNodeConfig } from "../../gpu-node/config.js";
import { type RunningGpuNode, startGpuNode } from "../../gpu-node/server/node.js";
import { intFlag, requireGgufFile, UsageError, UserError } from "../args.js";
import { command } from "../command.js";
import { inheritedEnv } from "../config.js";
import { portInUseMessage } from "../ports.js";

const HELP = `usage: kvgraft serve gpu --model FILE [--port 8788] [--host 127.0.0.1] [--data-dir DIR]
         [--slots 2|vram] [--context 4096] [--kv f16|q8_0] [--max-waiting N] [--drain-timeout-ms 30000]
         [--no-sandbox] [--edge-url URL] [--node-id ID] [--public-url URL] [--heartbeat-ms 2000] [--json]
       kvgraft serve edge [flags]   (see kvgraft serve edge --help)

serve gpu runs the GPU node: one model, a block store in --data-dir (default .data/gpu), the
signed HTTP API on loopback by default. It prints the URL once ready (--json: a JSON line
{url, model, engine}). SIGTERM, SIGINT or SIGHUP drains: new work is refused with 503, running requests
finish (or are aborted after the drain timeout), then it exits 0. Bad configuration exits 2.
--no-sandbox starts no sandbox: the node runs no programs, so deposits, transfers and solves that
need one answer 501 sandbox_unavailable (permanent: no Retry-After; /health says why); grafts and
generation work as usual.
Environment: KVGRAFT_GPU_SECRET (required, >= 16 characters), MODEL_PATH (when --model is absent),
KV_LLAMA=cpu|lastBuild|auto, KV_THREADS, KVGRAFT_LOG_LEVEL=debug|info|warn|error|silent,
KVGRAFT_WARM_BUDGET_BYTES (the warm tier's RAM, default 2 GiB), KVGRAFT_WARM_START=on|off (fill it from
disk after the start, most recently used first; default on), KVGRAFT_ACCESS_AUD + KVGRAFT_ACCESS_TEAM_DOMAIN (require
a Cloudflare Access JWT on every signed route). With --edge-url (or KVGRAFT_EDGE_URL) the node
registers with that edge and sends signed heartbeats (id: --node-id / KVGRAFT_NODE_ID, default one
kept in the data dir; URL the edge calls: --public-url / KVGRAFT_PUBLIC_URL, default the listening one).`;

/** Signals that drain and stop the node: SIGHUP (its terminal closed) like SIGTERM and SIGINT. */
const STOP_SIGNALS: NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP"];

/** `kvgraft serve gpu|edge`. */
export default async function serve(argv: string[]): Promise<number> {
  const [target, ...rest] = argv;
  if (target === "edge") {
    const { serveEdge } = await import("./serve-edge.js");
    return serveEdge(rest);
  }
  if (target === "gpu") return serveGpu(rest);
  if (target === "--help" || target === "-h") {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  throw new UsageError(
    `${target ? `unknown service '${target}'` : "no service given"} (available: gpu, edge)`,
  );
}

/**
 * The node's environment and options from this process's environment and the flags (which win
 * over the variables they stand for); the node validates both once (a ConfigError: exit 2).
 */
function gpuInput(flags: Record<string, string | boolean | undefined>): GpuNodeInput {
  const str = (name: string) => (typeof flags[name] === "string" ? (flags[name] as string) : undefined);
  const env = inheritedEnv();
  const modelPath = str("model") ?? (env.MODEL_PATH || undefined);
  if (!modelPath) throw new UsageError("--model FILE (or MODEL_PATH) is required");
  requireGgufFile(modelPath, str("model") ? "--model" : "MODEL_PATH");
  const int = (name: string, key: string, min: number) =>
    str(name) === undefined ? {} : { [key]: intFlag(str(name), name, 0, min) };
  return {
    env: {
      ...env,
      MODEL_PATH: modelPath,
      ...(str("edge-url") !== undefined ? { KVGRAFT_EDGE_URL: str("edge-url") } : {}),
      ...(str("node-id") !== undefined ? { KVGRAFT_NODE_ID: str("node-id") } : {}),
      ...(str("public-url") !== undefined ? { KVGRAFT_PUBLIC_URL: str("public-url") } : {}),
    },
    dataDir: resolve(str("data-dir") ?? ".data/gpu"),
    sandbox: !flags["no-sandbox"],
    ...(str("host") !== undefined ? { host: str("host") as string } : {}),
    ...(str("kv") !== undefined ? { kvType: str("kv") as "f16" } : {}),
    ...int("port", "port", 0),
    ...(str("slots") === "vram" ? { slots: "vram" as const } : int("slots", "slots", 1)),
    ...int("context", "contextSize", 1),
    ...int("max-waiting", "maxWaiting", 0),
    ...int("drain-timeout-ms", "drainTimeoutMs", 0),
    ...int("heartbeat-ms", "heartbeatMs", 1),
  };
}

const serveGpu = command(
  {
    help: HELP,
    flags: {
      model: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      "data-dir": { type: "string" },
      slots: { type: "string" },
      context: { type: "string" },
      kv: { type: "string" },
      "max-waiting": { type: "string" },
      "drain-timeout-ms": { type: "string" },
      "edge-url": { type: "string" },
      "node-id": { type: "string" },
      "public-url": { type: "string" },
      "heartbeat-ms": { type: "string" },
      "no-sandbox": { type: "boolean", default: false },
    },
  },
  async (flags, out) => {
    const input = gpuInput(flags);
    // Validated before the engine opens: a mistake is one line and exit 2.
    const config = resolveGpuNodeConfig(input);
    let node: RunningGpuNode;
    try {
      node = await startGpuNode(input);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
      throw new UserError(
        `${portInUseMessage(config.host, config.port)}; stop that process or choose another --port`,
      );
    }
    process.stdout.write(
      `kvgraft gpu node listening on ${node.url} (model ${node.engine.modelFingerprint.name || config.modelPath})\n`,
    );
    out.result({
      url: node.url,
      model: node.engine.modelFingerprint,
      engine: node.engine.engineFingerprint,
      nodeId: node.nodeId,
    });

    await new Promise<void>((done) => {
      const onSignal = (signal: NodeJS.Signals) => {
        process.stderr.write(`${signal}: draining\n`);
        for (const stopSignal of STOP_SIGNALS) {
          process.off(stopSignal, onSignal);
          // A second signal during the drain stops at once.
          process.once(stopSignal, () => process.exit(1));
        }
        node.stop().then(done, (err: Error) => {
          process.stderr.write(`shutdown failed: ${err.stack ?? err.message}\n`);
          process.exit(1);
        });
      };
      for (const stopSignal of STOP_SIGNALS) process.on(stopSignal, onSignal);
    });
    process.stderr.write("stopped\n");
    return 0;
  },
);
