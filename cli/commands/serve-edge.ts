/** `kvgraft serve edge`: the edge as a Node process (edge/runtime/node.ts), configured from flags and the environment. */
import { DEFAULT_DB_URL, startEdgeServer, waitForStopSignal } from "../../edge/runtime/node.js";
import { UsageError } from "../args.js";
import { command } from "../command.js";

const HELP = `usage: kvgraft serve edge [--port N] [--host H] [--gpu-url URL] [--db file:PATH|libsql://...] [--json]

Runs the edge (HTTP API) as a Node process. Configuration comes from the environment
(LIBSQL_URL, LIBSQL_AUTH_TOKEN, KVGRAFT_GPU_URL, KVGRAFT_GPU_SECRET, KVGRAFT_ADMIN_KEY, EDGE_PORT/PORT,
KVGRAFT_RATE_LIMIT, ...); flags win. GPU nodes started with --edge-url register here and heartbeat
(signed with KVGRAFT_GPU_SECRET); blocks live on KVGRAFT_REPLICAS nodes (default 2), see edge/cluster/gpu-pool.ts. Default database: ${DEFAULT_DB_URL}; default port 8787.
With --json, prints one JSON line {url, adminKey} when ready (adminKey: a key generated now, else null).
Stops cleanly on SIGINT, SIGTERM or SIGHUP.`;

/** `kvgraft serve edge`: runs until SIGINT, SIGTERM or SIGHUP; returns the exit code. */
export const serveEdge = command(
  {
    help: HELP,
    flags: {
      port: { type: "string" },
      host: { type: "string" },
      "gpu-url": { type: "string" },
      db: { type: "string" },
    },
  },
  async (flags, out) => {
    let port: number | undefined;
    if (flags.port !== undefined) {
      port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65_535)
        throw new UsageError(`--port must be an integer 0..65535, got ${flags.port}`);
    }
    const edge = await startEdgeServer({
      ...(port !== undefined ? { port } : {}),
      ...(flags.host ? { host: flags.host } : {}),
      overrides: { LIBSQL_URL: flags.db, KVGRAFT_GPU_URL: flags["gpu-url"] },
    });
    if (out.json) out.result({ url: edge.url, adminKey: edge.generatedAdminKey });
    else {
      process.stdout.write(`kvgraft edge listening on ${edge.url} (database ${edge.config.db.url})\n`);
      if (edge.generatedAdminKey)
        process.stdout.write(`admin key (shown once, store it now): ${edge.generatedAdminKey}\n`);
    }
    await waitForStopSignal();
    await edge.close();
    return 0;
  },
);
