/**
 * A GPU node's heartbeat, once its signature checked out: the registry row is written (a draining
 * node is marked down at once), the replica records of blocks the node reports corrupt (found
 * damaged at its warm start and quarantined there) are removed, so routing stops sending those
 * grafts to it and the rebalancer copies the block back from a sound replica, and the pool learns
 * whether the node joined, came up, went down or stayed as it was, which decides whether it
 * rebalances. Also the node list the admin views show.
 */
import type { Heartbeat } from "../../shared/heartbeat.js";
import { reportedHealth } from "../cluster/node-directory.js";
import { type GpuNode, getNode, listNodes, markNodeDown, upsertNode } from "../db/nodes.js";
import { removeNodeReplicas } from "../db/replicas.js";
import type { Deps } from "../http.js";

/** Records a heartbeat; returns the node's row and the heartbeat interval the edge expects. */
export async function recordHeartbeat(
  deps: Pick<Deps, "db" | "gpu" | "clock">,
  beat: Heartbeat,
): Promise<{ row: GpuNode; intervalMs: number }> {
  const previous = await getNode(deps.db, beat.id);
  const now = new Date(deps.clock.now());
  let row = await upsertNode(
    deps.db,
    {
      id: beat.id,
      url: beat.url,
      modelFingerprint: beat.model.sha256,
      engineFingerprint: beat.engine.id,
      capacity: { ...beat.capacity },
      health: reportedHealth(beat),
    },
    now,
  );
  if (beat.status === "draining") row = await markNodeDown(deps.db, beat.id);
  const corrupt = beat.tiers.corrupt ?? [];
  const dropped = corrupt.length ? await removeNodeReplicas(deps.db, beat.id, corrupt) : 0;
  // A copy the node lost: the rebalancer puts one back from a sound replica.
  if (dropped > 0) deps.gpu.rebalancer.kick("damaged replica reported");
  const change: "joined" | "up" | "down" | "same" = !previous
    ? "joined"
    : previous.status === "down" && row.status === "up"
      ? "up"
      : previous.status === "up" && row.status === "down"
        ? "down"
        : previous.url !== row.url
          ? "up"
          : "same";
  deps.gpu.heartbeatReceived(row, change);
  return { row, intervalMs: deps.gpu.settings.heartbeatMs };
}

/** Registered nodes with liveness, tiers and this edge's per-node metrics. */
export async function describeNodes(deps: Pick<Deps, "db" | "gpu">) {
  const pool = deps.gpu;
  const rows = new Map<string, GpuNode>((await listNodes(deps.db)).map((r) => [r.id, r]));
  // Fresh: the static node's /health asked now, registry rows re-read.
  await pool.refreshStatic();
  return (await pool.nodes(true)).map((n) => {
    const row = rows.get(n.id);
    return {
      id: n.id,
      url: n.url,
      source: n.source,
      status: n.status,
      live: n.live,
      modelFingerprint: n.modelFingerprint,
      engineFingerprint: n.engineFingerprint,
      lastHeartbeatAt: n.lastHeartbeatAt === null ? null : new Date(n.lastHeartbeatAt).toISOString(),
      missedHeartbeats: n.missedHeartbeats,
      capacity: n.capacity,
      health: n.health,
      tiers: { hot: n.hot, warm: n.warm, coldCount: n.coldCount, bytes: n.tierBytes },
      queueDepth: n.queueDepth,
      metrics: pool.metrics(n.id),
      createdAt: row?.createdAt ?? null,
    };
  });
}
