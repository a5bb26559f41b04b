/**
 * Several GPU nodes behind the one `GpuClient` interface the edge already uses (edge/gpu.ts).
 * Nodes come from the registry (heartbeats, edge/db/nodes.ts) plus, optionally, the one statically
 * configured node (KVGRAFT_GPU_URL), so a single configured URL keeps working as a pool of one.
 *
 * Per call: a graft goes to a live replica of its block where it is hot, else warm, else any live
 * replica (edge/placement.ts); a deposit goes to a live node of the largest fingerprint group; plain
 * generation and sandbox runs go to the least busy live node. A node that fails mid-request
 * (unreachable, timed out, draining, queue full, lost the block) is skipped and the call retried
 * once on another node within the request's deadline; an unreachable node is marked down until its
 * next heartbeat. No live replica: 503 `no_replica`.
 */
import { z } from "zod";
import { DomainError, unavailable } from "../shared/errors.js";
import { createGpuClient, GpuError, type GpuNodeClient } from "../shared/gpu-client.js";
import { sha256Hex } from "../shared/hash.js";
import { type Heartbeat, heartbeatFrom } from "../shared/heartbeat.js";
import type { BlockManifest, GenerationResult, Health } from "../shared/protocol.js";
import { rendezvousRank } from "../shared/rendezvous.js";
import type { Database } from "./db/database.js";
import { type GpuNode, listNodes, markNodeDown, recordMissedHeartbeat } from "./db/nodes.js";
import { type GpuClient, type SandboxRunResult, toDomainError } from "./gpu.js";
import {
  addReplica,
  blockFingerprints,
  desiredNodes,
  isLive,
  majorityGroup,
  type NodeView,
  type RouteTier,
  recordedHolders,
  removeReplica,
  routeCandidates,
} from "./placement.js";
import { Rebalancer } from "./rebalance.js";

/** Cluster settings (from the edge's environment; every one has a default). */
export interface PoolSettings {
  /** Copies of each block (R). */
  replicas: number;
  /** The heartbeat interval nodes are expected to keep. */
  heartbeatMs: number;
  /** Heartbeats missed in a row before a node counts as down. */
  downAfter: number;
  /** Block copies running at once during a rebalance. */
  transferConcurrency: number;
  /** A full rebalance runs at least this often (0: only on membership changes and on request). */
  rebalanceIntervalMs: number;
}

const settingsSchema = z.object({
  KVGRAFT_REPLICAS: z.coerce.number().int().min(1).max(16).default(2),
  KVGRAFT_HEARTBEAT_MS: z.coerce.number().int().min(50).max(600_000).default(2_000),
  KVGRAFT_HEARTBEAT_DOWN_AFTER: z.coerce.number().int().min(1).max(100).default(3),
  KVGRAFT_TRANSFER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  KVGRAFT_REBALANCE_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(30_000),
});

/** Reads the cluster settings from the environment record the entry hands the edge config. */
export function readPoolSettings(env: Record<string, unknown>): PoolSettings {
  const strings: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === "string" && v !== "") strings[k] = v;
  const e = settingsSchema.parse(strings);
  return {
    replicas: e.KVGRAFT_REPLICAS,
    heartbeatMs: e.KVGRAFT_HEARTBEAT_MS,
    downAfter: e.KVGRAFT_HEARTBEAT_DOWN_AFTER,
    transferConcurrency: e.KVGRAFT_TRANSFER_CONCURRENCY,
    rebalanceIntervalMs: e.KVGRAFT_REBALANCE_INTERVAL_MS,
  };
}

export interface GpuPoolOptions extends PoolSettings {
  db: Database;
  /** Shared secret of signed requests and heartbeats; null: no node can be used. */
  secret: string | null;
  /** The statically configured node (KVGRAFT_GPU_URL), if any. */
  staticNode: { id: string; url: string } | null;
  timeoutMs: number;
  healthTimeoutMs: number;
  fetch?: typeof fetch;
  log?: (message: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
}

/** Per-node counters kept by this edge process. */
export interface NodeMetrics {
  requests: number;
  failures: number;
  /** Calls that failed here and were retried on another node. */
  failovers: number;
  grafts: Record<RouteTier, number>;
  copiesIn: number;
  copiesOut: number;
  bytesIn: number;
  drops: number;
  latencyMsSum: number;
}

const newMetrics = (): NodeMetrics => ({
  requests: 0,
  failures: 0,
  failovers: 0,
  grafts: { hot: 0, warm: 0, cold: 0 },
  copiesIn: 0,
  copiesOut: 0,
  bytesIn: 0,
  drops: 0,
  latencyMsSum: 0,
});

/** A node as the pool sees it. */
export interface PoolNode extends NodeView {
  source: "registry" | "static";
  status: "up" | "down";
  lastHeartbeatAt: number | null;
  missedHeartbeats: number;
  capacity: Record<string, unknown>;
  coldCount: number | null;
  /** What the node last reported (its heartbeat, or the static node's /health); `{error}` when unreachable. */
  health: Record<string, unknown>;
}

/** The part of a heartbeat the registry keeps as the node's health (and the admin view shows). */
export function reportedHealth(beat: Heartbeat): Record<string, unknown> {
  return {
    status: beat.status,
    tiers: beat.tiers,
    queue: beat.queue,
    model: { name: beat.model.name, architecture: beat.model.architecture, sha256: beat.model.sha256 },
    engine: { id: beat.engine.id, backend: beat.engine.backend, gpuName: beat.engine.gpuName },
  };
}

/** Where a routed call went. */
export interface Routed<T> {
  result: T;
  nodeId: string;
  /** The tier the route chose (grafts only). */
  tier: RouteTier | null;
  /** Nodes tried, in order (two when the first failed). */
  attempts: { nodeId: string; error?: string; ms: number }[];
}

export interface GpuPool extends GpuClient {
  readonly kind: "pool";
  readonly settings: PoolSettings;
  readonly db: Database;
  readonly rebalancer: Rebalancer;
  /** All known nodes with liveness and tiers (`fresh`: re-read the registry now). */
  nodes(fresh?: boolean): Promise<PoolNode[]>;
  /**
   * Reads the statically configured node's /health now (it sends no heartbeats), so the next
   * `nodes()` shows its current tiers, queue and capacity; a no-op without one.
   */
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
  graftRouted(req: { blockId: string; query: string; maxTokens: number }): Promise<Routed<GenerationResult>>;
  /** After a deposit on `originNodeId`: records it and copies the block to its R nodes. */
  replicate(blockId: string, originNodeId: string): Promise<BlockPlacement>;
  /** Where a block should be and where it is. */
  placement(blockId: string): Promise<BlockPlacement>;
  /** Starts the missed-heartbeat sweep and the periodic rebalance (Node entry). */
  startBackground(): void;
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

const REFRESH_MS = 250;
const MIN_RETRY_BUDGET_MS = 50;

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
  const timing = { heartbeatMs: settings.heartbeatMs, downAfter: settings.downAfter };
  let rows: GpuNode[] = [];
  let rowsAt = Number.NEGATIVE_INFINITY;
  let rowsLoading: Promise<void> | undefined;
  const suspect = new Map<string, number>();
  const clients = new Map<string, { url: string; client: GpuNodeClient }>();
  const metrics = new Map<string, NodeMetrics>();
  let staticInfo: { modelFingerprint: string; engineFingerprint: string; beat: Heartbeat } | null = null;
  let staticError: string | null = null;
  let staticDownAt: number | undefined;
  let rr = 0;
  const timers: ReturnType<typeof setInterval>[] = [];

  const metricsOf = (id: string) => {
    let m = metrics.get(id);
    if (!m) {
      m = newMetrics();
      metrics.set(id, m);
    }
    return m;
  };

  const urlOf = (id: string): string | undefined =>
    rows.find((r) => r.id === id)?.url ??
    (options.staticNode?.id === id ? options.staticNode.url : undefined);

  function client(id: string): GpuNodeClient {
    const url = urlOf(id);
    if (!url || !options.secret)
      throw unavailable("no_replica", `GPU node ${id} is not known to this edge.`, 5);
    const cached = clients.get(id);
    if (cached && cached.url === url) return cached.client;
    const made = createGpuClient({
      baseUrl: url,
      secret: options.secret,
      // Calls carry their own deadline signal; this only bounds transfers and listings.
      timeoutMs: Math.max(options.timeoutMs, 600_000),
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    clients.set(id, { url, client: made });
    return made;
  }

  async function loadRows(fresh: boolean): Promise<void> {
    if (!fresh && now() - rowsAt < REFRESH_MS) return;
    rowsLoading ??= listNodes(db)
      .then((r) => {
        rows = r;
        rowsAt = now();
      })
      .finally(() => {
        rowsLoading = undefined;
      });
    await rowsLoading;
  }

  /**
   * The statically configured node sends no heartbeats, so what it holds comes from its /health:
   * read when asked (`refreshStatic`: the admin node list; tiers change with every graft) and, for
   * its fingerprints, once it has registered neighbours (placement groups).
   */
  async function readStaticHealth(): Promise<void> {
    const s = options.staticNode;
    if (!s || !options.secret || rows.some((r) => r.id === s.id)) return;
    try {
      const health: Health = await createGpuClient({
        baseUrl: s.url,
        secret: options.secret,
        timeoutMs: options.healthTimeoutMs,
        ...(options.fetch ? { fetch: options.fetch } : {}),
      }).health();
      staticInfo = {
        modelFingerprint: health.model.sha256,
        engineFingerprint: health.engine.id,
        beat: heartbeatFrom(s.id, s.url, health),
      };
      staticError = null;
    } catch (err) {
      // The node still gets calls (a pool of one has nowhere else to send them); the view says why
      // its report is missing, and placement leaves unknown fingerprints out of groups.
      staticError = err instanceof Error ? err.message : String(err);
    }
  }

  async function staticView(): Promise<PoolNode | null> {
    const s = options.staticNode;
    if (!s || rows.some((r) => r.id === s.id)) return null;
    if (!staticInfo && rows.length > 0) await readStaticHealth();
    const down =
      staticDownAt !== undefined && now() - staticDownAt < settings.heartbeatMs * settings.downAfter;
    return {
      id: s.id,
      url: s.url,
      source: "static",
      status: down ? "down" : "up",
      live: !down,
      modelFingerprint: staticInfo?.modelFingerprint ?? "",
      engineFingerprint: staticInfo?.engineFingerprint ?? "",
      hot: staticInfo?.beat.tiers.hot ?? [],
      warm: staticInfo?.beat.tiers.warm ?? [],
      queueDepth: staticInfo?.beat.queue.depth ?? 0,
      lastHeartbeatAt: null,
      missedHeartbeats: 0,
      capacity: staticInfo ? { ...staticInfo.beat.capacity } : {},
      coldCount: staticInfo?.beat.tiers.coldCount ?? null,
      health: {
        ...(staticInfo ? reportedHealth(staticInfo.beat) : {}),
        ...(staticError !== null ? { error: staticError } : {}),
      },
    };
  }

  function rowView(row: GpuNode): PoolNode {
    const health = row.health as {
      tiers?: { hot?: string[]; warm?: string[]; coldCount?: number };
      queue?: { depth?: number };
    };
    const last = row.lastHeartbeatAt.getTime();
    return {
      id: row.id,
      url: row.url,
      source: "registry",
      status: row.status,
      live: isLive(
        { status: row.status, lastHeartbeatAt: last, suspectSinceMs: suspect.get(row.id) },
        now(),
        timing,
      ),
      modelFingerprint: row.modelFingerprint,
      engineFingerprint: row.engineFingerprint,
      hot: health.tiers?.hot ?? [],
      warm: health.tiers?.warm ?? [],
      queueDepth: health.queue?.depth ?? 0,
      lastHeartbeatAt: last,
      missedHeartbeats: row.missedHeartbeats,
      capacity: row.capacity,
      coldCount: health.tiers?.coldCount ?? null,
      health: row.health,
    };
  }

  async function nodes(fresh = false): Promise<PoolNode[]> {
    await loadRows(fresh);
    const views = rows.map(rowView);
    const s = await staticView();
    if (!s) return views;
    // The configured node is never written off while it is the only one: a pool of one keeps
    // sending it every call, as the single-node edge did.
    if (!s.live && !views.some((v) => v.live)) s.live = true;
    return [s, ...views];
  }

  /**
   * What a failed call says: `verdict` (about the request: no retry), `lost_block` (the node lacks
   * the block), `retry` (another node may do it: queue full, no sandbox), `suspect` (the node is
   * slow, draining or broken: skip it until its next heartbeat), `gone` (unreachable: mark it down).
   */
  function classify(err: unknown): "gone" | "suspect" | "retry" | "lost_block" | "verdict" {
    if (err instanceof GpuError) {
      if (err.status === 404 && err.code === "block_not_found") return "lost_block";
      if (err.status === 429 || err.code === "queue_full" || err.code === "sandbox_unavailable")
        return "retry";
      if (err.status >= 500) return "suspect";
      return "verdict";
    }
    if (err instanceof DomainError) return err.status >= 500 ? "suspect" : "verdict";
    const name = err instanceof Error ? err.name : "";
    if (name === "TimeoutError" || name === "AbortError") return "suspect";
    // fetch rejects with a TypeError when the node cannot be reached (refused, reset, DNS).
    if (err instanceof TypeError) return "gone";
    return "suspect";
  }

  async function nodeFailed(id: string, err: unknown): Promise<void> {
    suspect.set(id, now());
    metricsOf(id).failures++;
    if (options.staticNode?.id === id && !rows.some((r) => r.id === id)) staticDownAt = now();
    // Routing skips it already (suspect); the registry write need not hold up the retry.
    else if (classify(err) === "gone") void markNodeDown(db, id).catch(() => undefined);
    log("gpu node failed", { nodeId: id, error: err instanceof Error ? err.message : String(err) });
    // Later than other triggers: the failed call's retry goes first, and a blip may heal.
    rebalancer.kick("node failed", 1_000);
  }

  /**
   * Runs `fn` on the first candidate, and on the second if the first fails in a way another
   * node could fix (at most two attempts, within `timeoutMs` of the start).
   */
  async function routed<T>(
    candidates: string[],
    fn: (c: GpuNodeClient, opts: { deadlineMs: number; signal: AbortSignal }, nodeId: string) => Promise<T>,
    onLostBlock?: (nodeId: string) => Promise<void>,
    external?: AbortSignal,
  ): Promise<Routed<T>> {
    const started = performance.now();
    const attempts: Routed<T>["attempts"] = [];
    let lastError: unknown;
    for (const nodeId of candidates.slice(0, 2)) {
      const left = options.timeoutMs - (performance.now() - started);
      if (attempts.length > 0 && left < MIN_RETRY_BUDGET_MS) break;
      const t0 = performance.now();
      const m = metricsOf(nodeId);
      m.requests++;
      try {
        const result = await fn(
          client(nodeId),
          {
            deadlineMs: Math.max(1, Math.floor(left)),
            signal: AbortSignal.timeout(Math.max(1, Math.ceil(left))),
          },
          nodeId,
        );
        const ms = performance.now() - t0;
        m.latencyMsSum += ms;
        attempts.push({ nodeId, ms });
        return { result, nodeId, tier: null, attempts };
      } catch (err) {
        const ms = performance.now() - t0;
        m.latencyMsSum += ms;
        // The caller gave up: not the node's fault, and nobody waits for a retry.
        if (external?.aborted) throw toDomainError(err, options.timeoutMs);
        const kind = classify(err);
        attempts.push({
          nodeId,
          ms,
          error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
        });
        lastError = err;
        if (kind === "verdict") throw toDomainError(err, options.timeoutMs);
        if (kind === "lost_block") await onLostBlock?.(nodeId);
        else if (kind === "gone") await nodeFailed(nodeId, err);
        else if (kind === "suspect") suspect.set(nodeId, now());
        m.failovers++;
      }
    }
    if (lastError === undefined) throw noReplica();
    const mapped = toDomainError(lastError, options.timeoutMs);
    throw new DomainError(
      mapped.status,
      mapped.code,
      mapped.message,
      { ...mapped.details, attempts },
      mapped.retryAfterS,
    );
  }

  const noReplica = (blockId?: string) =>
    new DomainError(
      503,
      "no_replica",
      blockId ? "No GPU node that holds this block is reachable now." : "No GPU node is reachable now.",
      blockId ? { blockId } : undefined,
      Math.max(1, Math.ceil((settings.heartbeatMs * settings.downAfter) / 1000)),
    );

  /** Live nodes, least busy first (round-robin among equals). */
  async function anyNodes(): Promise<string[]> {
    const live = (await nodes()).filter((n) => n.live);
    const offset = rr++;
    return live
      .map((n, i) => ({ n, k: (i + offset) % Math.max(1, live.length) }))
      .sort((a, b) => a.n.queueDepth - b.n.queueDepth || a.k - b.k)
      .map(({ n }) => n.id);
  }

  async function graftCandidates(blockId: string): Promise<{ id: string; tier: RouteTier }[]> {
    const all = await nodes();
    const info = await blockFingerprints(db, blockId);
    if (!info) {
      // Not in the library: any live node may have it (a pool of one, direct API use).
      return rendezvousRank(
        blockId,
        all.filter((n) => n.live).map((n) => n.id),
      ).map((id) => ({ id, tier: "cold" as const }));
    }
    const holders = (await recordedHolders(db, [blockId])).get(blockId) ?? new Set<string>();
    const candidates = routeCandidates(blockId, holders, all);
    // A pool of one: the configured node is the only place the block can be.
    const only = all.length === 1 && all[0]?.source === "static" ? all[0] : null;
    if (candidates.length === 0 && only?.live) return [{ id: only.id, tier: "cold" }];
    return candidates;
  }

  async function graftRouted(req: {
    blockId: string;
    query: string;
    maxTokens: number;
  }): Promise<Routed<GenerationResult>> {
    const candidates = await graftCandidates(req.blockId);
    if (candidates.length === 0) throw noReplica(req.blockId);
    const out = await routed(
      candidates.map((c) => c.id),
      (c, opts) => c.graft(req, opts),
      async (nodeId) => {
        // The node does not hold it after all: forget the record; the rebalancer recopies it.
        await removeReplica(db, req.blockId, nodeId).catch(() => undefined);
        rebalancer.kick("replica missing");
      },
    );
    const tier = candidates.find((c) => c.id === out.nodeId)?.tier ?? null;
    if (tier) metricsOf(out.nodeId).grafts[tier]++;
    return { ...out, tier };
  }

  async function depositPlaced(text: string): Promise<{ manifest: BlockManifest; nodeId: string }> {
    const all = (await nodes()).filter((n) => n.live);
    const group = majorityGroup(all);
    const eligible = group
      ? all.filter(
          (n) =>
            n.modelFingerprint === group.modelFingerprint && n.engineFingerprint === group.engineFingerprint,
        )
      : all;
    if (eligible.length === 0) throw noReplica();
    const order = rendezvousRank(
      await sha256Hex(text),
      eligible.map((n) => n.id),
    );
    const out = await routed(order, (c, opts) => c.deposit(text, opts));
    return { manifest: out.result, nodeId: out.nodeId };
  }

  async function placement(blockId: string): Promise<BlockPlacement> {
    const all = await nodes();
    const info = await blockFingerprints(db, blockId);
    const holders = (await recordedHolders(db, [blockId])).get(blockId) ?? new Set<string>();
    const desired = info ? desiredNodes(blockId, info, all, settings.replicas) : [];
    const byId = new Map(all.map((n) => [n.id, n]));
    return {
      blockId,
      known: info !== null,
      replicas: settings.replicas,
      desired,
      holders: [...holders].sort().map((nodeId) => {
        const n = byId.get(nodeId);
        const tier: RouteTier | null = !n
          ? null
          : n.hot.includes(blockId)
            ? "hot"
            : n.warm.includes(blockId)
              ? "warm"
              : "cold";
        return { nodeId, live: n?.live ?? false, tier, desired: desired.includes(nodeId) };
      }),
      missing: desired.filter((id) => !holders.has(id)),
      route: info ? routeCandidates(blockId, holders, all) : [],
    };
  }

  async function replicate(blockId: string, originNodeId: string): Promise<BlockPlacement> {
    await addReplica(db, blockId, originNodeId);
    try {
      await rebalancer.placeBlock(blockId);
    } catch (err) {
      log("replication incomplete; the rebalancer will retry", {
        blockId,
        error: err instanceof Error ? err.message : String(err),
      });
      rebalancer.kick("replication incomplete");
    }
    return placement(blockId);
  }

  /** Counts missed heartbeats of registry nodes; a node that goes down triggers a rebalance. */
  async function sweep(): Promise<void> {
    await loadRows(true);
    const t = now();
    let wentDown = false;
    for (const row of rows) {
      if (row.status !== "up") continue;
      const late = t - row.lastHeartbeatAt.getTime() - settings.heartbeatMs * (row.missedHeartbeats + 1);
      if (late <= settings.heartbeatMs / 2) continue;
      const updated = await recordMissedHeartbeat(db, row.id, settings.downAfter).catch(() => null);
      if (updated?.status === "down") {
        wentDown = true;
        log("gpu node down: missed heartbeats", { nodeId: row.id, missed: updated.missedHeartbeats });
      }
    }
    if (wentDown) {
      await loadRows(true);
      rebalancer.kick("node down");
    }
  }

  const mappedAny =
    <T>(
      fn: (c: GpuNodeClient, opts: { deadlineMs: number; signal: AbortSignal }) => Promise<T>,
      external?: AbortSignal,
    ) =>
    async (): Promise<T> => {
      const order = await anyNodes();
      if (order.length === 0) throw noReplica();
      return (await routed(order, fn, undefined, external)).result;
    };

  const pool: GpuPool = {
    kind: "pool",
    settings,
    db,
    get configured() {
      return options.secret !== null;
    },
    // Assigned below (the rebalancer needs the pool).
    rebalancer: undefined as unknown as Rebalancer,
    nodes,
    refreshStatic: readStaticHealth,
    client,
    metrics: metricsOf,
    allMetrics: () => Object.fromEntries(metrics),
    nodeFailed,
    heartbeatReceived(row, change) {
      const i = rows.findIndex((r) => r.id === row.id);
      if (i >= 0) rows[i] = row;
      else rows = [...rows, row].sort((a, b) => (a.id < b.id ? -1 : 1));
      if (change !== "down") suspect.delete(row.id);
      if (change !== "same") {
        log("gpu node membership", { nodeId: row.id, change });
        rebalancer.kick(`node ${change}`);
      }
    },
    depositPlaced,
    deposit: async (text) => (await depositPlaced(text)).manifest,
    graftRouted,
    graft: async (req) => (await graftRouted(req)).result,
    generate: (req) => mappedAny((c, opts) => c.generate(req, opts))(),
    solve: (req, signal) =>
      mappedAny(
        (c, opts) =>
          c.solve(req, signal ? { ...opts, signal: AbortSignal.any([opts.signal, signal]) } : opts),
        signal,
      )(),
    runProgram: (req): Promise<SandboxRunResult> =>
      mappedAny((c) => c.sandboxRun(req))().catch((err: unknown) => {
        throw toDomainError(err, options.timeoutMs);
      }),
    async getBlock(id) {
      // Recorded holders first, then every other live node (a block imported straight into a node
      // is not recorded yet): a cheap metadata read, so all of them may be asked.
      const first = (await graftCandidates(id)).map((c) => c.id);
      const order = [...new Set([...first, ...(await anyNodes())])];
      if (order.length === 0) throw noReplica(id);
      let last: unknown;
      for (const nodeId of order) {
        try {
          return await client(nodeId).getBlock(id);
        } catch (err) {
          last = err;
          if (classify(err) === "verdict") break;
        }
      }
      throw toDomainError(last, options.timeoutMs);
    },
    async deleteBlock(id) {
      const live = (await nodes()).filter((n) => n.live);
      let deleted = 0;
      for (const n of live) {
        try {
          await client(n.id).deleteBlock(id);
          deleted++;
        } catch (err) {
          if (!(err instanceof GpuError && err.status === 404)) throw toDomainError(err, options.timeoutMs);
        }
        await removeReplica(db, id, n.id);
      }
      if (deleted === 0) throw new DomainError(404, "block_not_found", "No live GPU node holds this block.");
    },
    async health() {
      const order = await anyNodes();
      if (order.length === 0) throw noReplica();
      let last: unknown;
      for (const id of order.slice(0, 2)) {
        try {
          return await createGpuClient({
            baseUrl: urlOf(id) as string,
            secret: options.secret as string,
            timeoutMs: options.healthTimeoutMs,
            ...(options.fetch ? { fetch: options.fetch } : {}),
          }).health();
        } catch (err) {
          last = err;
        }
      }
      throw toDomainError(last, options.healthTimeoutMs);
    },
    replicate,
    placement,
    startBackground() {
      if (timers.length) return;
      const tick = setInterval(() => {
        void sweep().catch((err: Error) => log("heartbeat sweep failed", { error: err.message }));
      }, settings.heartbeatMs);
      tick.unref?.();
      timers.push(tick);
      if (settings.rebalanceIntervalMs > 0) {
        const full = setInterval(() => rebalancer.kick("periodic"), settings.rebalanceIntervalMs);
        full.unref?.();
        timers.push(full);
      }
      rebalancer.kick("start");
    },
    async close() {
      for (const t of timers.splice(0)) clearInterval(t);
      await rebalancer.idle();
    },
  };
  const rebalancer = new Rebalancer(pool, { log });
  (pool as { rebalancer: Rebalancer }).rebalancer = rebalancer;
  return pool;
}
