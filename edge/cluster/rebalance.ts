/**
 * The rebalancer: makes every ready block live on the R nodes rendezvous hashing assigns it now.
 * A pass lists what each live node really holds, corrects the `block_replicas` records, plans
 * (edge/cluster/placement.ts `planRebalance`) and runs the copies, at most `transferConcurrency` at once,
 * then drops the copies left on nodes outside a block's set (a move is a copy, then a drop, and a
 * drop happens only once every desired node holds the block). It repeats until nothing is left
 * to do (at most a few passes). Blocks quarantined or superseded in the library are removed from
 * live nodes.
 *
 * A copy streams the block file from the source node (`GET /v1/blocks/:id/file`, signed) into the
 * target's signed import endpoint chunk by chunk; the target checks each chunk's SHA-256, then the
 * file's SHA-256, fingerprints and probe. A target that already holds the block answers 409
 * `block_exists`, which counts as done, so copies are idempotent.
 *
 * Runs are triggered by membership changes (a node joins, comes back or goes down), by failed
 * calls, periodically, and by `POST /admin/rebalance`; concurrent triggers coalesce into one
 * follow-up run.
 */
import { GpuError, type GpuNodeClient } from "../../shared/gpu-client.js";
import type { Database } from "../db/database.js";
import { retiredBlockIds } from "../db/library.js";
import {
  addReplica,
  blockFingerprints,
  readyBlocks,
  recordedHolders,
  removeReplica,
} from "../db/replicas.js";
import type { NodeMetrics } from "./node-metrics.js";
import {
  type BlockHoldings,
  desiredNodes,
  type NodeView,
  planRebalance,
  type RebalanceAction,
} from "./placement.js";

/** Progress of the current run and the result of the last one. */
export interface RebalanceReport {
  reason: string;
  startedAt: string;
  finishedAt: string | null;
  passes: number;
  liveNodes: number;
  blocks: number;
  planned: { copies: number; drops: number };
  done: { copies: number; drops: number };
  failed: { action: RebalanceAction; error: string }[];
  bytesCopied: number;
  /** Ready blocks no live node holds (they come back with their nodes). */
  unavailable: number;
  recordsFixed: number;
}

/**
 * What the rebalancer needs of the cluster (the pool implements it): the nodes, their clients and
 * counters, the replica records, and where to report a node that failed a listing.
 */
export interface RebalanceCluster {
  readonly db: Database;
  readonly settings: { readonly replicas: number; readonly transferConcurrency: number };
  nodes(fresh?: boolean): Promise<NodeView[]>;
  client(nodeId: string): GpuNodeClient;
  metrics(nodeId: string): NodeMetrics;
  nodeFailed(nodeId: string, err: unknown): Promise<void>;
}

const LIST_TIMEOUT_MS = 10_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DOMException(`no answer within ${ms} ms`, "TimeoutError")), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Bounds concurrent transfers (shared by rebalances and post-deposit replication). */
class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  maxActive = 0;
  constructor(readonly size: number) {}
  get inFlight() {
    return this.active;
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.size) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

export class Rebalancer {
  private readonly transfers: Semaphore;
  private running: Promise<RebalanceReport> | null = null;
  private pending: string | null = null;
  private current: RebalanceReport | null = null;
  private last: RebalanceReport | null = null;
  private runs = 0;
  /** Placements done by a node fetching from the bucket instead of a copy between nodes. */
  private bucketFetches = 0;
  private debounce: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(
    private readonly cluster: RebalanceCluster,
    private readonly options: { log: (message: string, fields?: Record<string, unknown>) => void },
  ) {
    this.transfers = new Semaphore(cluster.settings.transferConcurrency);
  }

  /** Progress for /admin/rebalance. */
  status() {
    return {
      running: this.running !== null,
      runs: this.runs,
      transfersInFlight: this.transfers.inFlight,
      maxConcurrentTransfers: this.transfers.maxActive,
      bucketFetches: this.bucketFetches,
      transferConcurrency: this.transfers.size,
      current: this.current,
      last: this.last,
    };
  }

  /**
   * Asks for a run after `delayMs` (default 50 ms); triggers during a run, or before a scheduled
   * one starts, coalesce into one run.
   */
  kick(reason: string, delayMs = 50): void {
    if (this.closed) return;
    if (this.running) {
      this.pending ??= reason;
      return;
    }
    if (this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      void this.run(reason).catch((err: Error) =>
        this.options.log("rebalance failed", { reason, error: err.message }),
      );
    }, delayMs);
    this.debounce.unref?.();
  }

  /** Runs now (or joins the run in progress) and resolves with its report. */
  run(reason = "request"): Promise<RebalanceReport> {
    if (this.running) return this.running;
    this.running = this.runNow(reason).finally(() => {
      this.running = null;
      const next = this.pending;
      this.pending = null;
      if (next !== null) this.kick(next);
    });
    return this.running;
  }

  /** Resolves once no run is in progress or scheduled; stops future kicks. */
  async idle(): Promise<void> {
    this.closed = true;
    if (this.debounce) clearTimeout(this.debounce);
    while (this.running) await this.running.catch(() => undefined);
  }

  /**
   * Copies a block from `from` to `to` and records the replica; returns the bytes moved (0 when the
   * target already held it).
   */
  async copy(blockId: string, from: string, to: string): Promise<number> {
    return this.transfers.run(async () => {
      const source = this.cluster.client(from);
      const target = this.cluster.client(to);
      let bytes = 0;
      try {
        // With a bucket the target fetches the block itself: a hint, no bytes between nodes.
        if (await this.fetchFromBucket(blockId, to).catch(() => false)) return 0;
        const { manifest, body } = await source.openBlockFile(blockId);
        const imported = await target.importBlockStream(manifest, body);
        if (imported.sha256 !== blockId)
          throw new Error(`target committed ${imported.sha256}, not ${blockId}`);
        bytes = manifest.sizeBytes;
      } catch (err) {
        if (!(err instanceof GpuError && err.status === 409 && err.code === "block_exists")) throw err;
      }
      await addReplica(this.cluster.db, blockId, to);
      const mOut = this.cluster.metrics(from);
      const mIn = this.cluster.metrics(to);
      mOut.copiesOut++;
      mIn.copiesIn++;
      mIn.bytesIn += bytes;
      return bytes;
    });
  }

  /**
   * Asks `node` to put the block on its disk from the bucket (a `cold` prefetch) and records the
   * replica. False when it cannot: a node without a bucket, or a block not in it (404), or a node
   * that predates the hint (400); then the caller copies the block as without a bucket.
   */
  async fetchFromBucket(blockId: string, node: string): Promise<boolean> {
    try {
      await this.cluster.client(node).prefetch(blockId, "cold");
    } catch (err) {
      if (err instanceof GpuError && (err.status === 404 || err.status === 400)) return false;
      throw err;
    }
    await addReplica(this.cluster.db, blockId, node);
    this.bucketFetches++;
    return true;
  }

  /** Removes a copy from a node and its record (already gone counts as done). */
  async drop(blockId: string, node: string): Promise<void> {
    try {
      await this.cluster.client(node).deleteBlock(blockId);
    } catch (err) {
      if (!(err instanceof GpuError && err.status === 404)) throw err;
    }
    await removeReplica(this.cluster.db, blockId, node);
    this.cluster.metrics(node).drops++;
  }

  /**
   * Places one block from the records (after a deposit): copies it to each desired node that lacks
   * it, then drops copies outside the desired set once all of them hold it.
   */
  async placeBlock(blockId: string): Promise<void> {
    const info = await blockFingerprints(this.cluster.db, blockId);
    if (!info) return;
    const nodes = await this.cluster.nodes();
    const holders = (await recordedHolders(this.cluster.db, [blockId])).get(blockId) ?? new Set<string>();
    const { actions } = planRebalance([{ blockId, ...info, holders }], nodes, this.cluster.settings.replicas);
    const copies = actions.filter((a) => a.kind === "copy");
    await Promise.all(copies.map((a) => this.copy(blockId, a.from, a.to)));
    const desired = desiredNodes(blockId, info, nodes, this.cluster.settings.replicas);
    const now = (await recordedHolders(this.cluster.db, [blockId])).get(blockId) ?? new Set<string>();
    // Only with a full desired set in place (never when none is known: that would drop the last copy).
    if (desired.length > 0 && desired.every((id) => now.has(id)))
      for (const id of now) {
        const live = nodes.find((n) => n.id === id)?.live;
        if (live && !desired.includes(id)) await this.drop(blockId, id);
      }
  }

  /**
   * Asks the desired live nodes of each block no live node holds to fetch it from the bucket;
   * resolves to the blocks still unavailable (no bucket, or not in it).
   */
  private async fetchUnavailable(
    blockIds: readonly string[],
    holdings: readonly BlockHoldings[],
    nodes: readonly NodeView[],
  ): Promise<string[]> {
    const left: string[] = [];
    for (const blockId of blockIds) {
      const info = holdings.find((h) => h.blockId === blockId);
      const desired = info ? desiredNodes(blockId, info, nodes, this.cluster.settings.replicas) : [];
      const fetched = await Promise.all(
        desired.map((node) =>
          this.transfers.run(() => this.fetchFromBucket(blockId, node)).catch(() => false),
        ),
      );
      if (!fetched.some(Boolean)) left.push(blockId);
    }
    return left;
  }

  private async runNow(reason: string): Promise<RebalanceReport> {
    this.runs++;
    const report: RebalanceReport = {
      reason,
      startedAt: new Date().toISOString(),
      finishedAt: null,
      passes: 0,
      liveNodes: 0,
      blocks: 0,
      planned: { copies: 0, drops: 0 },
      done: { copies: 0, drops: 0 },
      failed: [],
      bytesCopied: 0,
      unavailable: 0,
      recordsFixed: 0,
    };
    this.current = report;
    const { db } = this.cluster;
    try {
      for (let pass = 0; pass < 4; pass++) {
        report.passes = pass + 1;
        const nodes = (await this.cluster.nodes(true)).map((n) => ({ ...n }));
        // One node (or none): nothing to place or move, but the report still counts what there is
        // (a single `npm start` node is live, and holds every ready block).
        if (nodes.length < 2) {
          report.liveNodes = nodes.filter((n) => n.live).length;
          report.blocks = (await readyBlocks(db)).length;
          break;
        }
        // What each live node really holds.
        const inventory = new Map<string, Set<string>>();
        await Promise.all(
          nodes
            .filter((n) => n.live)
            .map(async (n) => {
              try {
                const listed = await withTimeout(this.cluster.client(n.id).listBlocks(), LIST_TIMEOUT_MS);
                inventory.set(n.id, new Set(listed.map((m) => m.sha256)));
              } catch (err) {
                n.live = false;
                await this.cluster.nodeFailed(n.id, err);
              }
            }),
        );
        const live: NodeView[] = nodes.filter((n) => n.live);
        report.liveNodes = live.length;
        const ready = await readyBlocks(db);
        report.blocks = ready.length;
        const recorded = await recordedHolders(
          db,
          ready.map((b) => b.blockId),
        );
        // Correct the records for live nodes; build the holdings from what the nodes report.
        const holdings = [];
        for (const b of ready) {
          const rec = recorded.get(b.blockId) ?? new Set<string>();
          const holders = new Set<string>();
          for (const n of live) {
            const has = inventory.get(n.id)?.has(b.blockId) ?? false;
            if (has) holders.add(n.id);
            if (has && !rec.has(n.id)) {
              await addReplica(db, b.blockId, n.id);
              report.recordsFixed++;
            } else if (!has && rec.has(n.id)) {
              await removeReplica(db, b.blockId, n.id);
              report.recordsFixed++;
            }
          }
          holdings.push({ ...b, holders });
        }
        // Blocks the library quarantined or superseded do not stay on live nodes.
        const quarantined = await retiredBlockIds(db);
        const extra: RebalanceAction[] = [];
        for (const sha256 of quarantined)
          for (const n of live)
            if (inventory.get(n.id)?.has(sha256)) extra.push({ kind: "drop", blockId: sha256, node: n.id });

        const plan = planRebalance(holdings, nodes, this.cluster.settings.replicas);
        // No live node holds these: with a bucket, their desired nodes fetch them from it.
        report.unavailable = (await this.fetchUnavailable(plan.unavailable, holdings, nodes)).length;
        const actions = [...plan.actions, ...extra];
        if (actions.length === 0) break;
        const copies = actions.filter((a) => a.kind === "copy");
        const drops = actions.filter((a) => a.kind === "drop");
        report.planned.copies += copies.length;
        report.planned.drops += drops.length;
        await Promise.all(
          copies.map(async (a) => {
            try {
              report.bytesCopied += await this.copy(a.blockId, a.from, a.to);
              report.done.copies++;
            } catch (err) {
              report.failed.push({ action: a, error: (err as Error).message });
            }
          }),
        );
        for (const a of drops) {
          try {
            await this.drop(a.blockId, a.node);
            report.done.drops++;
          } catch (err) {
            report.failed.push({ action: a, error: (err as Error).message });
          }
        }
        if (report.failed.length > 0) break;
      }
    } finally {
      report.finishedAt = new Date().toISOString();
      this.current = null;
      this.last = report;
    }
    if (report.planned.copies + report.planned.drops > 0 || report.failed.length > 0)
      this.options.log("rebalance", {
        reason,
        copies: report.done.copies,
        drops: report.done.drops,
        failed: report.failed.length,
        bytes: report.bytesCopied,
      });
    return report;
  }
}
