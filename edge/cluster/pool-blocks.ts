/**
 * The pool's block-wide operations (edge/cluster/gpu-pool.ts holds them as methods): a block's
 * manifest from any node that has it, a delete on every node, the health of any node, a block's
 * placement, and replication after a deposit.
 */
import { DomainError } from "../../shared/errors.js";
import { GpuError } from "../../shared/gpu-client.js";
import type { BlockManifest, Health } from "../../shared/protocol.js";
import { addReplica, blockFingerprints, recordedHolders, removeReplica } from "../db/replicas.js";
import { gpuFailure } from "./gpu-failure.js";
import type { PoolNode } from "./node-directory.js";
import { desiredNodes, type RouteTier, routeCandidates } from "./placement.js";
import { type CallContext, graftCandidates, leastBusy, noReplica } from "./pool-calls.js";
import type { Rebalancer } from "./rebalance.js";

export interface BlockPlacement {
  blockId: string;
  known: boolean;
  replicas: number;
  desired: string[];
  holders: { nodeId: string; live: boolean; tier: RouteTier | null; desired: boolean }[];
  /** Desired nodes that do not hold it yet. */
  missing: string[];
  route: { id: string; tier: RouteTier }[];
}

/** What the pool's calls and its block-wide operations share. */
export interface PoolContext extends CallContext {
  timeoutMs: number;
  rebalancer: Rebalancer;
  log: (message: string, fields?: Record<string, unknown>) => void;
}

/**
 * A block's manifest from the first node that has it: recorded holders first, then every other
 * live node (a block imported straight into a node is not recorded yet); a cheap metadata read, so
 * all of them may be asked.
 */
export async function getBlockAnywhere(ctx: PoolContext, id: string): Promise<BlockManifest> {
  const all = await ctx.directory.nodes();
  const first = (await graftCandidates(ctx.db, id, all)).map((c) => c.id);
  const order = [...new Set([...first, ...leastBusy(await ctx.directory.nodes(), ctx.nextOffset())])];
  if (order.length === 0) throw noReplica(ctx.settings, id);
  let last: unknown;
  for (const nodeId of order) {
    try {
      return await ctx.directory.client(nodeId).getBlock(id);
    } catch (err) {
      last = err;
      if (gpuFailure(err, ctx.timeoutMs).kind === "verdict") break;
    }
  }
  throw gpuFailure(last, ctx.timeoutMs).error;
}

/**
 * Deletes a block from every live node, then its replica records; 404 when none held it. The
 * nodes come first, so a database that refuses the records' removal (full, read-only) still
 * leaves no node holding the block (a failed deposit's clean-up relies on it).
 */
export async function deleteEverywhere(ctx: PoolContext, id: string): Promise<void> {
  const live = (await ctx.directory.nodes()).filter((n) => n.live);
  let deleted = 0;
  for (const n of live) {
    try {
      await ctx.directory.client(n.id).deleteBlock(id);
      deleted++;
    } catch (err) {
      if (!(err instanceof GpuError && err.status === 404)) throw gpuFailure(err, ctx.timeoutMs).error;
    }
  }
  for (const n of live) await removeReplica(ctx.db, id, n.id);
  if (deleted === 0) throw new DomainError(404, "block_not_found", "No live GPU node holds this block.");
}

/** The health of the least busy live node (the next one if it does not answer). */
export async function healthOfAny(ctx: PoolContext, healthTimeoutMs: number): Promise<Health> {
  const order = leastBusy(await ctx.directory.nodes(), ctx.nextOffset());
  if (order.length === 0) throw noReplica(ctx.settings);
  let last: unknown;
  for (const id of order.slice(0, 2)) {
    try {
      return await ctx.directory.healthClient(id).health();
    } catch (err) {
      last = err;
    }
  }
  throw gpuFailure(last, healthTimeoutMs).error;
}

/** Where a block should be and where it is. */
export async function placement(ctx: PoolContext, blockId: string): Promise<BlockPlacement> {
  const all = await ctx.directory.nodes();
  const info = await blockFingerprints(ctx.db, blockId);
  const holders = (await recordedHolders(ctx.db, [blockId])).get(blockId) ?? new Set<string>();
  const desired = info ? desiredNodes(blockId, info, all, ctx.settings.replicas) : [];
  const byId = new Map(all.map((n) => [n.id, n]));
  const tierOf = (n: PoolNode): RouteTier =>
    n.hot.includes(blockId) ? "hot" : n.warm.includes(blockId) ? "warm" : "cold";
  return {
    blockId,
    known: info !== null,
    replicas: ctx.settings.replicas,
    desired,
    holders: [...holders].sort().map((nodeId) => {
      const n = byId.get(nodeId);
      return {
        nodeId,
        live: n?.live ?? false,
        tier: n ? tierOf(n) : null,
        desired: desired.includes(nodeId),
      };
    }),
    missing: desired.filter((id) => !holders.has(id)),
    route: info ? routeCandidates(blockId, holders, all) : [],
  };
}

/** After a deposit on `originNodeId`: records it and copies the block to its R nodes. */
export async function replicate(
  ctx: PoolContext,
  blockId: string,
  originNodeId: string,
): Promise<BlockPlacement> {
  await addReplica(ctx.db, blockId, originNodeId);
  try {
    await ctx.rebalancer.placeBlock(blockId);
  } catch (err) {
    ctx.log("replication incomplete; the rebalancer will retry", {
      blockId,
      error: err instanceof Error ? err.message : String(err),
    });
    ctx.requestRebalance("replication incomplete");
  }
  return placement(ctx, blockId);
}
