/**
 * The flywheel's worker loop (flywheel.service.ts does one item): claim, process, and poll the
 * queue while idle; a worker runs next to a Node edge (`npm start`) when the flywheel is on.
 */
import { createLogger, type Logger } from "../../shared/http/logger.js";
import { systemClock } from "../http.js";
import type { AdminDeps } from "./admin.service.js";
import { type FlywheelBudget, isBackgroundDeferred, runFlywheelOnce } from "./flywheel.service.js";

export interface FlywheelWorker {
  /** Items finished by this worker. */
  readonly processed: number;
  /** Aborted when the worker stops; its idle waits and GPU calls listen to it. */
  readonly signal: AbortSignal;
  /** Stops after aborting the item in progress (it goes back to the queue). */
  stop(): Promise<void>;
}

/**
 * Resolves after `ms`, or at once when `signal` aborts. The abort listener is removed when the
 * timer fires: an idle worker waits every few seconds, and listeners left behind would pile up
 * on its one signal (Node warns past 10: MaxListenersExceededWarning).
 */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Runs the worker loop until stopped: claim, process, and poll every `idleMs` when idle; after a
 * failure (the GPU node down, say) it waits `failureBackoffMs` before the next claim.
 */
export function startFlywheelWorker(
  deps: AdminDeps,
  options: { budget?: FlywheelBudget; idleMs?: number; failureBackoffMs?: number; logger?: Logger } = {},
): FlywheelWorker {
  const stopping = new AbortController();
  const idleMs = options.idleMs ?? 2_000;
  const failureBackoffMs = options.failureBackoffMs ?? 15_000;
  let processed = 0;
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      let waitMs = idleMs;
      try {
        const item = await runFlywheelOnce(deps, options.budget, {
          signal: stopping.signal,
          ...(options.logger ? { logger: options.logger } : {}),
        });
        if (item) {
          processed++;
          continue;
        }
      } catch (err) {
        if (stopping.signal.aborted) break;
        waitMs = failureBackoffMs;
        // Users' work kept the GPU node busy: the item is queued again, nothing failed.
        if (isBackgroundDeferred(err))
          options.logger?.info("flywheel item deferred: the GPU node is busy with users' work", {
            retryInMs: waitMs,
          });
        else
          options.logger?.error("flywheel item failed", {
            error: err instanceof Error ? err.message : String(err),
          });
      }
      await pause(waitMs, stopping.signal);
    }
  })();
  return {
    get processed() {
      return processed;
    },
    signal: stopping.signal,
    async stop() {
      stopping.abort(new Error("the flywheel worker is stopping"));
      await loop;
    },
  };
}

/**
 * Runs a worker next to a Node edge (npm start) when the edge's configuration has the flywheel
 * on (polling the queue every `KVGRAFT_FLYWHEEL_IDLE_MS` while idle); closing the edge stops the
 * worker first. With the flywheel off the edge is returned as it is.
 */
export function withFlywheelWorker<
  E extends Pick<AdminDeps, "db" | "gpu" | "config"> & { close(): Promise<void> },
>(edge: E, options: { budget?: FlywheelBudget; logger?: Logger } = {}): E {
  if (!edge.config.flywheel.enabled) return edge;
  const worker = startFlywheelWorker(
    { db: edge.db, gpu: edge.gpu, config: edge.config, clock: systemClock },
    // JSON lines on stderr: stdout of `kvgraft start --json` carries only its summary.
    {
      logger: createLogger({ level: edge.config.logLevel }),
      idleMs: edge.config.flywheel.idleMs,
      ...options,
    },
  );
  const close = edge.close.bind(edge);
  return Object.assign(edge, {
    close: async () => {
      await worker.stop();
      await close();
    },
  });
}
