/**
 * Several GPU nodes behind the one `GpuClient` interface the edge already uses (edge/cluster/gpu.ts).
 * The pieces, one job each: the node directory (registry cache, the configured node, clients,
 * suspects: node-directory.ts), the request path (where a call goes, failover and failure
 * classification: pool-calls.ts), per-node counters (node-metrics.ts), replication and
 * rebalancing (rebalance.ts), the heartbeat sweep and timers (heartbeat-sweep.ts); this file wires
 * them and holds the block-wide operations (find, delete, placement, replication).
 *
 * A node that fails mid-request (unreachable, timed out, draining, queue full, lost the block) is
 * skipped and the call retried once on another node within the request's deadline; an unreachable
 * node is marked down until its next heartbeat. No live replica: 503 `no_replica`.
 */
import { DomainError } from "../../shared/errors.js";
import { GpuError, type GpuNodeClient } from "../../shared/gpu-client.js";
import type { BlockManifest, GenerationResult } from "../../shared/protocol.js";
import type { EdgeConfig, PoolSettings } from "../config.js";
import type { Database } from "../db/database.js";
import { type GpuNode, markNodeDown } from "../db/nodes.js";
import { addReplica, blockFingerprints, recordedHolders, removeReplica } from "../db/replicas.js";
import { type GpuClient, type ModelCallOptions, type SandboxRunResult, toDomainError } from "./gpu.js";
import { startPoolTimers, sweepMissedHeartbeats } from "./heartbeat-sweep.js";
import { createNodeDirectory, type NodeConnection, type PoolNode } from "./node-directory.js";
import { createMetricsBook, type NodeMetrics } from "./node-metrics.js";
import { desiredNodes, type RouteTier, routeCandidates } from "./placement.js";
import {
  type CallContext,
  classifyFailure,
  createFailover,
  depositPlaced,
  graftCandidates,
  graftRouted,
  leastBusy,
  noReplica,
  onLeastBusy,
  type Routed,
  streamedOnce,
} from "./pool-calls.js";
import { type RebalanceReport, Rebalancer } from "./rebalance.js";

export type { PoolSettings } from "../config.js";
export type { PoolNode } from "./node-directory.js";
export type { NodeMetrics } from "./node-metrics.js";
export type { Routed } from "./pool-calls.js";

export interface GpuPoolOptions extends PoolSettings, NodeConnection {
  log?: (message: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
  /**
   * Where requests for a rebalance go. Default: the rebalancer's own timer (Node). The Worker
   * collects them and runs one after the response (`ctx.waitUntil`), since a timer set in one
   * request may not outlive it there.
   */
  requestRebalance?: (reason: string, delayMs?: number) => void;
}

export interface GpuPool extends GpuClient {
  readonly kind: "pool";
  readonly settings: PoolSettings;
  readonly db: Database;
  readonly rebalancer: Rebalancer;
  /** All known nodes with liveness and tiers (`fresh`: re-read the registry now). */
  nodes(fresh?: boolean): Promise<PoolNode[]>;
  /** Reads the statically configured node's /health now (it sends no heartbeats); a no-op without one. */
  refreshStatic(): Promise<void>;
  /** A signed client of one node (for transfers). */
  client(nodeId: string): GpuNodeClient;
  metrics(nodeId: string): NodeMetrics;
  allMetrics(): Record<string, NodeMetrics>;
  /** Records that a call to the node failed in a way that says it is gone. */
  nodeFailed(nodeId: string, err: unknown): Promise<void>;
  /** A heartbeat arrived (the registry row is already written): refresh the view. */
  heartbeatReceived(row: GpuNode, change: "joined" | "up" | "down" | "same"): void;
  depositPlaced(text: string): Promise<{ manifest: BlockManifest; nodeId: string }>;
  graftRouted(
    req: { blockId: string; query: string; maxTokens: number },
    opts?: ModelCallOptions,
  ): Promise<Routed<GenerationResult>>;
  /** After a deposit on `originNodeId`: records it and copies the block to its R nodes. */
  replicate(blockId: string, originNodeId: string): Promise<BlockPlacement>;
  /** Where a block should be and where it is. */
  placement(blockId: string): Promise<BlockPlacement>;
  /** Starts the missed-heartbeat sweep and the periodic rebalance (Node entry). */
  startBackground(): void;
  /**
   * One round of that background work, for runtimes without timers (the Worker's Cron trigger):
   * the missed-heartbeat sweep, then a full rebalance.
   */
  upkeep(): Promise<RebalanceReport>;
  close(): Promise<void>;
}

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

export function isGpuPool(gpu: GpuClient): gpu is GpuPool {
  return (gpu as Partial<GpuPool>).kind === "pool";
}

/** What the pool's calls and its upkeep share. */
interface PoolContext extends CallContext {
  timeoutMs: number;
  rebalancer: Rebalancer;
  log: (message: string, fields?: Record<string, unknown>) => void;
}

/**
 * The pool both entries run (edge/runtime/node.ts and worker.ts): the configured node, if any, plus
 * the registry's, with the cluster settings of the edge's configuration (`config.pool`).
 */
export function createConfiguredPool(
  db: Database,
  config: EdgeConfig,
  extra: Pick<GpuPoolOptions, "log" | "requestRebalance">,
): GpuPool {
  return createGpuPool({
    db,
    secret: config.gpu.secret,
    headers: config.gpu.headers,
    staticNode: config.gpu.url ? { id: config.gpu.nodeId, url: config.gpu.url } : null,
    timeoutMs: config.gpu.timeoutMs,
    healthTimeoutMs: config.gpu.healthTimeoutMs,
    ...config.pool,
    ...extra,
  });
}

/** Creates the pool; nothing is contacted until the first call. */
export function createGpuPool(options: GpuPoolOptions): GpuPool {
  const { db } = options;
  const now = options.now ?? (() => Date.now());
  const log = options.log ?? (() => undefined);
  const settings: PoolSettings = {
    replicas: options.replicas,
    heartbeatMs: options.heartbeatMs,
    downAfter: options.downAfter,
    transferConcurrency: options.transferConcurrency,
    rebalanceIntervalMs: options.rebalanceIntervalMs,
  };
  const directory = createNodeDirectory({ ...options, now });
  const metrics = createMetricsBook();

  async function nodeFailed(id: string, err: unknown): Promise<void> {
    directory.markSuspect(id);
    if (directory.isUnregisteredStatic(id)) directory.markStaticDown();
    // Routing skips it already (suspect); the registry write need not hold up the retry.
    else if (classifyFailure(err) === "gone") void markNodeDown(db, id).catch(() => undefined);
    log("gpu node failed", { nodeId: id, error: err instanceof Error ? err.message : String(err) });
    // Later than other triggers: the failed call's retry goes first, and a blip may heal.
    requestRebalance("node failed", 1_000);
  }

  const cluster = {
    db,
    settings,
    nodes: directory.nodes,
    client: directory.client,
    metrics: metrics.of,
    nodeFailed,
  };
  const rebalancer = new Rebalancer(cluster, { log });
  const requestRebalance =
    options.requestRebalance ?? ((reason, delayMs) => rebalancer.kick(reason, delayMs));
  const sweepDeps = { db, directory, settings, now, log, kick: requestRebalance };
  let offset = 0;
  const ctx: PoolContext = {
    db,
    settings,
    timeoutMs: options.timeoutMs,
    directory,
    metrics,
    rebalancer,
    log,
    nextOffset: () => offset++,
    requestRebalance,
    failover: createFailover({
      timeoutMs: options.timeoutMs,
      timing: settings,
      client: directory.client,
      metrics,
      nodeGone: nodeFailed,
      markSuspect: directory.markSuspect,
    }),
  };
  let stopTimers: (() => void) | null = null;
  return {
    kind: "pool",
    ...cluster,
    rebalancer,
    get configured() {
      return options.secret !== null;
    },
    allMetrics: metrics.all,
    refreshStatic: directory.refreshStatic,
    heartbeatReceived(row, change) {
      directory.heartbeatReceived(row, change === "down");
      if (change !== "same") {
        log("gpu node membership", { nodeId: row.id, change });
        requestRebalance(`node ${change}`);
      }
    },
    depositPlaced: (text) => depositPlaced(ctx, text),
    deposit: async (text) => (await depositPlaced(ctx, text)).manifest,
    graftRouted: (req, opts) => graftRouted(ctx, req, opts),
    graft: async (req, opts) => (await graftRouted(ctx, req, opts)).result,
    generate: (req) => onLeastBusy(ctx, (c, opts) => c.generate(req, opts)),
    solve: (req, opts) =>
      onLeastBusy(
        ctx,
        streamedOnce(opts, (c, call) => (opts?.onToken ? c.solveStream(req, call) : c.solve(req, call))),
        opts?.signal,
      ),
    runProgram: (req): Promise<SandboxRunResult> =>
      onLeastBusy(ctx, (c) => c.sandboxRun(req)).catch((err: unknown) => {
        throw toDomainError(err, options.timeoutMs);
      }),
    getBlock: (id) => getBlockAnywhere(ctx, id),
    deleteBlock: (id) => deleteEverywhere(ctx, id),
    health: () => healthOfAny(ctx, options.healthTimeoutMs),
    replicate: (blockId, originNodeId) => replicate(ctx, blockId, originNodeId),
    placement: (blockId) => placement(ctx, blockId),
    startBackground() {
      stopTimers ??= startPoolTimers(sweepDeps);
    },
    async upkeep() {
      await sweepMissedHeartbeats(sweepDeps);
      return rebalancer.run("periodic");
    },
    async close() {
      stopTimers?.();
      await rebalancer.idle();
    },
  };
}

/**
 * A block's manifest from the first node that has it: recorded holders first, then every other
 * live node (a block imported straight into a node is not recorded yet); a cheap metadata read, so
 * all of them may be asked.
 */
async function getBlockAnywhere(ctx: PoolContext, id: string): Promise<BlockManifest> {
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
      if (classifyFailure(err) === "verdict") break;
    }
  }
  throw toDomainError(last, ctx.timeoutMs);
}

/**
 * Deletes a block from every live node, then its replica records; 404 when none held it. The
 * nodes come first, so a database that refuses the records' removal (full, read-only) still
 * leaves no node holding the block (a failed deposit's clean-up relies on it).
 */
async function deleteEverywhere(ctx: PoolContext, id: string): Promise<void> {
  const live = (await ctx.directory.nodes()).filter((n) => n.live);
  let deleted = 0;
  for (const n of live) {
    try {
      await ctx.directory.client(n.id).deleteBlock(id);
      deleted++;
    } catch (err) {
      if (!(err instanceof GpuError && err.status === 404)) throw toDomainError(err, ctx.timeoutMs);
    }
  }
  for (const n of live) await removeReplica(ctx.db, id, n.id);
  if (deleted === 0) throw new DomainError(404, "block_not_found", "No live GPU node holds this block.");
}

/** The health of the least busy live node (the next one if it does not answer). */
async function healthOfAny(ctx: PoolContext, healthTimeoutMs: number) {
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
  throw toDomainError(last, healthTimeoutMs);
}

/** Where a block should be and where it is. */
async function placement(ctx: PoolContext, blockId: string): Promise<BlockPlacement> {
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
async function replicate(ctx: PoolContext, blockId: string, originNodeId: string): Promise<BlockPlacement> {
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
