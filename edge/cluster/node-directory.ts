/**
 * The nodes a pool knows: the registry (heartbeats, edge/db/nodes.ts) read through a short cache,
 * plus, optionally, the one statically configured node (KVGRAFT_GPU_URL), so a single configured
 * URL keeps working as a pool of one. Keeps each node's signed client and which nodes failed a
 * call since their last heartbeat (suspects), and turns both into the `PoolNode` views placement
 * decides on.
 */

import { unavailable } from "../../shared/errors.js";
import { createGpuClient, type GpuNodeClient } from "../../shared/gpu-client.js";
import { type Heartbeat, heartbeatFrom } from "../../shared/heartbeat.js";
import type { Health, TierBytes } from "../../shared/protocol.js";
import type { Database } from "../db/database.js";
import { type GpuNode, listNodes } from "../db/nodes.js";
import { isLive, type NodeView } from "./placement.js";

/** A node as the pool sees it. */
export interface PoolNode extends NodeView {
  source: "registry" | "static";
  status: "up" | "down";
  lastHeartbeatAt: number | null;
  missedHeartbeats: number;
  capacity: Record<string, unknown>;
  coldCount: number | null;
  /** Bytes of block state per tier as the node last reported them; null from a node too old to report them. */
  tierBytes: TierBytes | null;
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

/** How the edge reaches its GPU nodes (the pool's options and the directory's). */
export interface NodeConnection {
  db: Database;
  /** Shared secret of signed requests and heartbeats; null: no node can be used. */
  secret: string | null;
  /** Sent on every call to a node (the Cloudflare Access service token in front of the nodes). */
  headers?: Record<string, string>;
  /** The statically configured node (KVGRAFT_GPU_URL), if any. */
  staticNode: { id: string; url: string } | null;
  timeoutMs: number;
  healthTimeoutMs: number;
  fetch?: typeof fetch;
}

export interface NodeDirectoryOptions extends NodeConnection {
  heartbeatMs: number;
  downAfter: number;
  now: () => number;
}

/** The nodes a pool can call, and what it has learned about them. */
export interface NodeDirectory {
  /** All known nodes with liveness and tiers (`fresh`: re-read the registry now). */
  nodes(fresh?: boolean): Promise<PoolNode[]>;
  /**
   * Reads the statically configured node's /health now (it sends no heartbeats), so the next
   * `nodes()` shows its current tiers, queue and capacity; a no-op without one.
   */
  refreshStatic(): Promise<void>;
  /** The registry rows as last read (`fresh`: re-read first). */
  registry(fresh?: boolean): Promise<readonly GpuNode[]>;
  /** A signed client of one node, for work and transfers (long timeout; calls bring deadlines). */
  client(nodeId: string): GpuNodeClient;
  /** A signed client of one node with the short health timeout. */
  healthClient(nodeId: string): GpuNodeClient;
  /** A call to the node failed: skip it until its next heartbeat. */
  markSuspect(nodeId: string): void;
  /** Whether the node is the configured one and not in the registry (it has no row to mark down). */
  isUnregisteredStatic(nodeId: string): boolean;
  /** The configured node failed: it counts as down for the time a registry node would need. */
  markStaticDown(): void;
  /** A heartbeat arrived: replace or add the node's row, and forgive a failure unless it went down. */
  heartbeatReceived(row: GpuNode, wentDown: boolean): void;
}

const REFRESH_MS = 250;

/** A registry row as the pool sees it; `suspectSinceMs`: when a call to it last failed. */
function registryView(
  row: GpuNode,
  suspectSinceMs: number | undefined,
  nowMs: number,
  timing: { heartbeatMs: number; downAfter: number },
): PoolNode {
  const health = row.health as {
    tiers?: { hot?: string[]; warm?: string[]; coldCount?: number; bytes?: TierBytes };
    queue?: { depth?: number };
  };
  const last = row.lastHeartbeatAt.getTime();
  return {
    id: row.id,
    url: row.url,
    source: "registry",
    status: row.status,
    live: isLive({ status: row.status, lastHeartbeatAt: last, suspectSinceMs }, nowMs, timing),
    modelFingerprint: row.modelFingerprint,
    engineFingerprint: row.engineFingerprint,
    hot: health.tiers?.hot ?? [],
    warm: health.tiers?.warm ?? [],
    queueDepth: health.queue?.depth ?? 0,
    lastHeartbeatAt: last,
    missedHeartbeats: row.missedHeartbeats,
    capacity: row.capacity,
    coldCount: health.tiers?.coldCount ?? null,
    tierBytes: health.tiers?.bytes ?? null,
    health: row.health,
  };
}

/** The configured node as the pool sees it, from its last /health (`beat`, null before one). */
function staticNodeView(
  node: { id: string; url: string },
  beat: Heartbeat | null,
  error: string | null,
  down: boolean,
): PoolNode {
  return {
    id: node.id,
    url: node.url,
    source: "static",
    status: down ? "down" : "up",
    live: !down,
    modelFingerprint: beat?.model.sha256 ?? "",
    engineFingerprint: beat?.engine.id ?? "",
    hot: beat?.tiers.hot ?? [],
    warm: beat?.tiers.warm ?? [],
    queueDepth: beat?.queue.depth ?? 0,
    lastHeartbeatAt: null,
    missedHeartbeats: 0,
    capacity: beat ? { ...beat.capacity } : {},
    coldCount: beat?.tiers.coldCount ?? null,
    tierBytes: beat?.tiers.bytes ?? null,
    health: { ...(beat ? reportedHealth(beat) : {}), ...(error !== null ? { error } : {}) },
  };
}

/** Creates the directory; the registry is read on first use. */
export function createNodeDirectory(options: NodeDirectoryOptions): NodeDirectory {
  const { db, now } = options;
  const timing = { heartbeatMs: options.heartbeatMs, downAfter: options.downAfter };
  let rows: GpuNode[] = [];
  let rowsAt = Number.NEGATIVE_INFINITY;
  let rowsLoading: Promise<void> | undefined;
  const suspect = new Map<string, number>();
  const clients = new Map<string, { url: string; client: GpuNodeClient }>();
  /** The configured node's last /health, as a heartbeat would report it. */
  let staticBeat: Heartbeat | null = null;
  let staticError: string | null = null;
  let staticDownAt: number | undefined;
  const fetchOpt = {
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
  };

  const urlOf = (id: string): string | undefined =>
    rows.find((r) => r.id === id)?.url ??
    (options.staticNode?.id === id ? options.staticNode.url : undefined);

  function signedClient(id: string, timeoutMs: number): GpuNodeClient {
    const url = urlOf(id);
    if (!url || !options.secret)
      throw unavailable("no_replica", `GPU node ${id} is not known to this edge.`, 5);
    return createGpuClient({ baseUrl: url, secret: options.secret, timeoutMs, ...fetchOpt });
  }

  function client(id: string): GpuNodeClient {
    const url = urlOf(id);
    const cached = clients.get(id);
    if (cached && cached.url === url) return cached.client;
    // Calls carry their own deadline signal; this only bounds transfers and listings.
    const made = signedClient(id, Math.max(options.timeoutMs, 600_000));
    clients.set(id, { url: url as string, client: made });
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
      const health: Health = await signedClient(s.id, options.healthTimeoutMs).health();
      staticBeat = heartbeatFrom(s.id, s.url, health);
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
    if (!staticBeat && rows.length > 0) await readStaticHealth();
    const down = staticDownAt !== undefined && now() - staticDownAt < timing.heartbeatMs * timing.downAfter;
    return staticNodeView(s, staticBeat, staticError, down);
  }

  return {
    async nodes(fresh = false) {
      await loadRows(fresh);
      const views = rows.map((row) => registryView(row, suspect.get(row.id), now(), timing));
      const s = await staticView();
      if (!s) return views;
      // The configured node is never written off while it is the only one: a pool of one keeps
      // sending it every call, as the single-node edge did.
      if (!s.live && !views.some((v) => v.live)) s.live = true;
      return [s, ...views];
    },
    refreshStatic: readStaticHealth,
    async registry(fresh = false) {
      await loadRows(fresh);
      return rows;
    },
    client,
    healthClient: (id) => signedClient(id, options.healthTimeoutMs),
    markSuspect: (id) => suspect.set(id, now()),
    isUnregisteredStatic: (id) => options.staticNode?.id === id && !rows.some((r) => r.id === id),
    markStaticDown() {
      staticDownAt = now();
    },
    heartbeatReceived(row, wentDown) {
      const i = rows.findIndex((r) => r.id === row.id);
      if (i >= 0) rows[i] = row;
      else rows = [...rows, row].sort((a, b) => (a.id < b.id ? -1 : 1));
      if (!wentDown) suspect.delete(row.id);
    },
  };
}
