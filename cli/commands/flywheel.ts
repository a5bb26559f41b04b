/**
 * `kvgraft flywheel`: the flywheel worker on its own (npm start runs one next to the edge). It
 * works on the edge's database and calls the GPU node like the edge does (signed).
 */

import { createConfiguredPool, type GpuPool } from "../../edge/cluster/gpu-pool.js";
import { readEdgeConfig } from "../../edge/config.js";
import { migrateDatabase, openDatabase } from "../../edge/db/client.js";
import { systemClock } from "../../edge/http.js";
import { DEFAULT_DB_URL, waitForStopSignal } from "../../edge/runtime/node.js";
import { DEFAULT_FLYWHEEL_BUDGET, runFlywheelOnce } from "../../edge/services/flywheel.service.js";
import { flywheelProgress } from "../../edge/services/flywheel-admin.service.js";
import { startFlywheelWorker } from "../../edge/services/flywheel-worker.js";
import { createLogger } from "../../shared/http/logger.js";
import { intFlag, UsageError } from "../args.js";
import { command } from "../command.js";
import { inheritedEnv, readToolEnv } from "../config.js";

const HELP = `usage: kvgraft flywheel [--edge-db file:PATH|libsql://...] [--gpu-url URL] [--once]
                        [--samples N] [--max-tokens N] [--json]

Solves queued unsure problems again with a bigger budget, verifies them by execution and
agreement (or an admin's reference answer) and deposits the accepted ones as blocks.
  --edge-db URL     the edge's database (default LIBSQL_URL, else ${DEFAULT_DB_URL})
  --gpu-url URL     the GPU node (default KVGRAFT_GPU_URL); KVGRAFT_GPU_SECRET signs the requests
  --once            process one queued item (if any) and exit; otherwise run until SIGINT/SIGTERM
  --samples N       samples of the heavier solve (default ${DEFAULT_FLYWHEEL_BUDGET.heavy.samples})
  --max-tokens N    output tokens of the heavier solve, over all samples (default ${DEFAULT_FLYWHEEL_BUDGET.heavy.maxTokens})
  --json            print one JSON object {item, progress} last (--once) or {processed, progress}`;

export default command(
  {
    help: HELP,
    flags: {
      "edge-db": { type: "string" },
      "gpu-url": { type: "string" },
      once: { type: "boolean", default: false },
      samples: { type: "string" },
      "max-tokens": { type: "string" },
    },
  },
  async (flags, out) => {
    const env = readToolEnv();
    const gpuUrl = flags["gpu-url"] ?? env.gpuUrl;
    const secret = env.gpuSecret;
    if (!gpuUrl) throw new UsageError("no GPU node given: pass --gpu-url URL (or set KVGRAFT_GPU_URL)");
    if (!secret)
      throw new UsageError(
        "KVGRAFT_GPU_SECRET is not set: set it to the secret the GPU node runs with (it signs every request)",
      );
    const config = readEdgeConfig({
      LIBSQL_URL: DEFAULT_DB_URL,
      ...inheritedEnv(),
      ...(flags["edge-db"] ? { LIBSQL_URL: flags["edge-db"] } : {}),
      KVGRAFT_GPU_URL: gpuUrl,
    });
    const budget = {
      ...DEFAULT_FLYWHEEL_BUDGET,
      heavy: {
        samples: intFlag(flags.samples, "samples", DEFAULT_FLYWHEEL_BUDGET.heavy.samples),
        maxTokens: intFlag(flags["max-tokens"], "max-tokens", DEFAULT_FLYWHEEL_BUDGET.heavy.maxTokens),
      },
    };
    const database = await openDatabase(config.db);
    let gpu: GpuPool | undefined;
    try {
      await migrateDatabase(database.db);
      // The edge's own client: a pool of the node given (and any the registry knows).
      gpu = createConfiguredPool(
        database.db,
        {
          ...config,
          gpu: { ...config.gpu, secret: config.gpu.secret ?? secret },
        },
        {},
      );
      const deps = { db: database.db, gpu, config, clock: systemClock };
      const logger = createLogger({ level: config.logLevel });
      if (flags.once) {
        const item = await runFlywheelOnce(deps, budget, { logger });
        const progress = await flywheelProgress(deps);
        out.say(item ? `item ${item.id}: ${item.status}` : "the queue is empty");
        out.result({ item, progress });
        return 0;
      }
      const worker = startFlywheelWorker(deps, { budget, logger });
      out.say(`flywheel worker running on ${config.db.url}; Ctrl-C stops it`);
      await waitForStopSignal();
      await worker.stop();
      if (out.json) out.result({ processed: worker.processed, progress: await flywheelProgress(deps) });
      return 0;
    } finally {
      await gpu?.close();
      database.close();
    }
  },
);
