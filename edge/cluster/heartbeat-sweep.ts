/**
 * The pool's background work on the Node entry: a sweep every heartbeat interval that counts the
 * heartbeats registry nodes missed (a node that goes down triggers a rebalance), and a periodic
 * full rebalance.
 */
import type { PoolSettings } from "../config.js";
import type { Database } from "../db/database.js";
import { recordMissedHeartbeat } from "../db/nodes.js";
import type { NodeDirectory } from "./node-directory.js";

export interface SweepDeps {
  db: Database;
  directory: NodeDirectory;
  settings: PoolSettings;
  now: () => number;
  log: (message: string, fields?: Record<string, unknown>) => void;
  /** Asks the rebalancer for a run. */
  kick: (reason: string) => void;
}

/** Counts missed heartbeats of registry nodes; a node that goes down triggers a rebalance. */
export async function sweepMissedHeartbeats(deps: SweepDeps): Promise<void> {
  const { settings } = deps;
  const rows = await deps.directory.registry(true);
  const t = deps.now();
  let wentDown = false;
  for (const row of rows) {
    if (row.status !== "up") continue;
    const late = t - row.lastHeartbeatAt.getTime() - settings.heartbeatMs * (row.missedHeartbeats + 1);
    if (late <= settings.heartbeatMs / 2) continue;
    const updated = await recordMissedHeartbeat(deps.db, row.id, settings.downAfter).catch(() => null);
    if (updated?.status === "down") {
      wentDown = true;
      deps.log("gpu node down: missed heartbeats", { nodeId: row.id, missed: updated.missedHeartbeats });
    }
  }
  if (wentDown) {
    await deps.directory.registry(true);
    deps.kick("node down");
  }
}

/** Starts the sweep and the periodic rebalance; returns the function that stops both. */
export function startPoolTimers(deps: SweepDeps): () => void {
  const timers: ReturnType<typeof setInterval>[] = [];
  const tick = setInterval(() => {
    void sweepMissedHeartbeats(deps).catch((err: Error) =>
      deps.log("heartbeat sweep failed", { error: err.message }),
    );
  }, deps.settings.heartbeatMs);
  tick.unref?.();
  timers.push(tick);
  if (deps.settings.rebalanceIntervalMs > 0) {
    const full = setInterval(() => deps.kick("periodic"), deps.settings.rebalanceIntervalMs);
    full.unref?.();
    timers.push(full);
  }
  deps.kick("start");
  return () => {
    for (const t of timers.splice(0)) clearInterval(t);
  };
}
