/**
 * The edge's GPU client: a pool of the GPU nodes it knows (a pool of one when only
 * KVGRAFT_GPU_URL is set), `Deps.gpu` in both entries. The pieces, one job each: the node
 * directory (registry cache, the configured node, clients, suspects: node-directory.ts), the
 * request path (where a call goes, failover: pool-calls.ts), what a failure means and the edge
 * error it becomes (gpu-failure.ts), per-node counters (node-metrics.ts), the block-wide
 * operations (find, delete, placement, replication: pool-blocks.ts), replication and rebalancing
 * (rebalance.ts), the heartbeat sweep and timers (heartbeat-sweep.ts); this class wires them.
 *
 * A node that fails mid-request (unreachable, timed out, draining, queue full, lost the block) is
 * skipped and the call retried once on another node within the request's deadline; an unreachable
 * node is marked down until its next heartbeat. No live replica: 503 `no_replica`. Every failure
 * the caller sees is a DomainError of the edge's (gpu-failure.ts).
 */
import type { GpuNodeClient } from "../../shared/gpu-client.js";
import type {
  BlockManifest,
  GenerateRequest,
  GenerationResult,
  GraftRequest,
  Health,
  SandboxRunRequest,
  SandboxRunResult,
} from "../../shared/protocol.js";
import type { SolveRequest, SolveResult } from "../../shared/solve-protocol.js";
import type { EdgeConfig, PoolSettings } from "../config.js";
import type { Database } from "../db/database.js";
import { type GpuNode, markNodeDown } from "../db/nodes.js";
import { gpuFailure } from "./gpu-failure.js";
import { type SweepDeps, startPoolTimers, sweepMissedHeartbeats } from "./heartbeat-sweep.js";
import {
  createNodeDirectory,
  type NodeConnection,
  type NodeDirectory,
  type PoolNode,
} from "./node-directory.js";
import { createMetricsBook, type MetricsBook, type NodeMetrics } from "./node-metrics.js";
import {
  type BlockPlacement,
  deleteEverywhere,
  getBlockAnywhere,
  healthOfAny,
  type PoolContext,
  placement,
  replicate,
} from "./pool-blocks.js";
import {
  createFailover,
  depositPlaced,
  graftRouted,
  type ModelCallOptions,
  onLeastBusy,
  type Routed,
  streamedOnce,
} from "./pool-calls.js";
import { type RebalanceCluster, type RebalanceReport, Rebalancer } from "./rebalance.js";

export type { PoolSettings } from "../config.js";
export type { PoolNode } from "./node-directory.js";
export type { NodeMetrics } from "./node-metrics.js";
export type { BlockPlacement } from "./pool-blocks.js";
export type { ModelCallOptions, Routed } from "./pool-calls.js";

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

/**
 * The pool both entries run (edge/runtime/node.ts and worker.ts): the configured node, if any, plus
 * the registry's, with the cluster settings of the edge's configuration (`config.pool`).
 */
export function createConfiguredPool(
  db: Database,
  config: EdgeConfig,
  extra: Pick<GpuPoolOptions, "log" | "requestRebalance">,
): GpuPool {
  return new GpuPool({
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
  return new GpuPool(options);
}

/** The GPU nodes of the edge, as one client: every model call, block operation and cluster view. */
export class GpuPool implements RebalanceCluster {
  readonly db: Database;
  readonly settings: PoolSettings;
  readonly rebalancer: Rebalancer;
  private readonly directory: NodeDirectory;
  private readonly book: MetricsBook;
  private readonly ctx: PoolContext;
  private readonly sweep: SweepDeps;
  private readonly log: (message: string, fields?: Record<string, unknown>) => void;
  private readonly requestRebalance: (reason: string, delayMs?: number) => void;
  private stopTimers: (() => void) | null = null;

  /** Nothing is contacted until the first call. */
  constructor(private readonly options: GpuPoolOptions) {
    const { db } = options;
    const now = options.now ?? (() => Date.now());
    this.db = db;
    this.log = options.log ?? (() => undefined);
    this.settings = {
      replicas: options.replicas,
      heartbeatMs: options.heartbeatMs,
      downAfter: options.downAfter,
      transferConcurrency: options.transferConcurrency,
      rebalanceIntervalMs: options.rebalanceIntervalMs,
    };
    this.directory = createNodeDirectory({ ...options, now });
    this.book = createMetricsBook();
    const rebalancer = new Rebalancer(this, { log: this.log });
    this.rebalancer = rebalancer;
    this.requestRebalance =
      options.requestRebalance ?? ((reason, delayMs) => rebalancer.kick(reason, delayMs));
    const log = this.log;
    const requestRebalance = this.requestRebalance;
    this.sweep = { db, directory: this.directory, settings: this.settings, now, log, kick: requestRebalance };
    let offset = 0;
    this.ctx = {
      db,
      settings: this.settings,
      timeoutMs: options.timeoutMs,
      directory: this.directory,
      metrics: this.book,
      rebalancer,
      log,
      nextOffset: () => offset++,
      requestRebalance,
      failover: createFailover({
        timeoutMs: options.timeoutMs,
        timing: this.settings,
        client: (id) => this.directory.client(id),
        metrics: this.book,
        nodeGone: (id, err) => this.nodeFailed(id, err),
        markSuspect: (id) => this.directory.markSuspect(id),
      }),
    };
  }

  /** Whether nodes can be called at all (false: no shared secret is configured). */
  get configured(): boolean {
    return this.options.secret !== null;
  }

  // Model work.

  /** Restores a block and answers the query after it (streamed when `opts.onToken` is set). */
  async graft(req: Omit<GraftRequest, "stream">, opts?: ModelCallOptions): Promise<GenerationResult> {
    return (await graftRouted(this.ctx, req, opts)).result;
  }

  /** A graft, with where it went (the node, the tier the route chose, the attempts). */
  graftRouted(req: Omit<GraftRequest, "stream">, opts?: ModelCallOptions): Promise<Routed<GenerationResult>> {
    return graftRouted(this.ctx, req, opts);
  }

  /** Plain generation without a block, on the least busy node. */
  generate(req: Omit<GenerateRequest, "stream">): Promise<GenerationResult> {
    return onLeastBusy(this.ctx, (c, opts) => c.generate(req, opts));
  }

  /** The sampled solve pipeline (k samples, programs in the sandbox, a vote); abortable, streamed with `opts.onToken`. */
  solve(req: Omit<SolveRequest, "stream">, opts?: ModelCallOptions): Promise<SolveResult> {
    return onLeastBusy(
      this.ctx,
      streamedOnce(opts, (c, call) => (opts?.onToken ? c.solveStream(req, call) : c.solve(req, call))),
      opts?.signal,
    );
  }

  /** Runs a program in a node's sandbox (`PARAMS = [...]` prepended; see gpu-node/sandbox). */
  runProgram(req: SandboxRunRequest): Promise<SandboxRunResult> {
    return onLeastBusy(this.ctx, (c) => c.sandboxRun(req)).catch((err: unknown) => {
      throw gpuFailure(err, this.options.timeoutMs).error;
    });
  }

  /** The health of the least busy live node (short timeout; a draining node reports `draining`). */
  health(): Promise<Health> {
    return healthOfAny(this.ctx, this.options.healthTimeoutMs);
  }

  // Blocks.

  /** Prefills the text on one node, saves and verifies its state; returns the block's manifest. */
  async deposit(text: string): Promise<BlockManifest> {
    return (await depositPlaced(this.ctx, text)).manifest;
  }

  /** A deposit, with the node it was placed on (then `replicate` copies it to its R nodes). */
  depositPlaced(text: string): Promise<{ manifest: BlockManifest; nodeId: string }> {
    return depositPlaced(this.ctx, text);
  }

  /** A stored block's manifest, from the first node that has it. */
  getBlock(id: string): Promise<BlockManifest> {
    return getBlockAnywhere(this.ctx, id);
  }

  /** Deletes a block from every live node, then its replica records; 404 when none held it. */
  deleteBlock(id: string): Promise<void> {
    return deleteEverywhere(this.ctx, id);
  }

  /** After a deposit on `originNodeId`: records it and copies the block to its R nodes. */
  replicate(blockId: string, originNodeId: string): Promise<BlockPlacement> {
    return replicate(this.ctx, blockId, originNodeId);
  }

  /** Where a block should be and where it is. */
  placement(blockId: string): Promise<BlockPlacement> {
    return placement(this.ctx, blockId);
  }

  // Nodes.

  /** All known nodes with liveness and tiers (`fresh`: re-read the registry now). */
  nodes(fresh?: boolean): Promise<PoolNode[]> {
    return this.directory.nodes(fresh);
  }

  /** Reads the statically configured node's /health now (it sends no heartbeats); a no-op without one. */
  refreshStatic(): Promise<void> {
    return this.directory.refreshStatic();
  }

  /** A signed client of one node (for transfers). */
  client(nodeId: string): GpuNodeClient {
    return this.directory.client(nodeId);
  }

  metrics(nodeId: string): NodeMetrics {
    return this.book.of(nodeId);
  }

  allMetrics(): Record<string, NodeMetrics> {
    return this.book.all();
  }

  /** Records that a call to the node failed in a way that says it is gone. */
  async nodeFailed(nodeId: string, err: unknown): Promise<void> {
    this.directory.markSuspect(nodeId);
    if (this.directory.isUnregisteredStatic(nodeId)) this.directory.markStaticDown();
    // Routing skips it already (suspect); the registry write need not hold up the retry.
    else if (gpuFailure(err, this.options.timeoutMs).kind === "gone")
      void markNodeDown(this.db, nodeId).catch(() => undefined);
    this.log("gpu node failed", { nodeId, error: err instanceof Error ? err.message : String(err) });
    // Later than other triggers: the failed call's retry goes first, and a blip may heal.
    this.requestRebalance("node failed", 1_000);
  }

  /** A heartbeat arrived (the registry row is already written): refresh the view. */
  heartbeatReceived(row: GpuNode, change: "joined" | "up" | "down" | "same"): void {
    this.directory.heartbeatReceived(row, change === "down");
    if (change !== "same") {
      this.log("gpu node membership", { nodeId: row.id, change });
      this.requestRebalance(`node ${change}`);
    }
  }

  // Background work.

  /** Starts the missed-heartbeat sweep and the periodic rebalance (Node entry). */
  startBackground(): void {
    this.stopTimers ??= startPoolTimers(this.sweep);
  }

  /**
   * One round of that background work, for runtimes without timers (the Worker's Cron trigger):
   * the missed-heartbeat sweep, then a full rebalance.
   */
  async upkeep(): Promise<RebalanceReport> {
    await sweepMissedHeartbeats(this.sweep);
    return this.rebalancer.run("periodic");
  }

  async close(): Promise<void> {
    this.stopTimers?.();
    await this.rebalancer.idle();
  }
}
