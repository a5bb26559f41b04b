/**
 * The GPU node registry over HTTP.
 *
 * - `POST /cluster/heartbeat`: a GPU node registers and heartbeats (shared/heartbeat.ts).
 *   Signed with the shared GPU secret (shared/signing.ts), not an API key, so it sits outside
 *   `/v1` and `/admin`. A node that joins or comes back up, or says it is draining, triggers a
 *   rebalance.
 * - Admin views (mounted under `/admin`): the node list with liveness, tiers and per-node metrics,
 *   a block's placement, rebalance progress and trigger, and per-node metrics as Prometheus text.
 */
import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { readBounded } from "../shared/body.js";
import { badRequest, notFound, tooLarge, unauthorized, unavailable } from "../shared/errors.js";
import { sha256Hex } from "../shared/hash.js";
import { heartbeatSchema } from "../shared/heartbeat.js";
import { sha256Schema } from "../shared/protocol.js";
import {
  NonceCache,
  SIGNATURE_HEADERS,
  verifySignatureHeaders,
  verifySignedBody,
} from "../shared/signing.js";
import { type GpuNode, listNodes, markNodeDown, upsertNode } from "./db/nodes.js";
import { gpuNodes } from "./db/schema.js";
import { type GpuPool, isGpuPool, reportedHealth } from "./gpu-pool.js";
import type { AppEnv, Deps } from "./http.js";

const HEARTBEAT_BODY_BYTES = 8 * 2 ** 20;

/** `POST /cluster/heartbeat` (mounted at the root, before the keyed prefixes). */
export function clusterRoutes(deps: Deps): Hono<AppEnv> {
  const nonces = new NonceCache();
  return new Hono<AppEnv>().post("/cluster/heartbeat", async (c) => {
    const secret = deps.config.gpu.secret;
    if (!secret)
      throw unavailable("registry_unavailable", "This edge has no GPU secret to check heartbeats with.");
    const tooBig = () => tooLarge("body_too_large", "The heartbeat is too large.");
    if (!c.req.header("transfer-encoding") && Number(c.req.header("content-length")) > HEARTBEAT_BODY_BYTES)
      throw tooBig();
    // The signature's headers first: an unsigned request is refused before its body is read.
    const url = new URL(c.req.url);
    const signed = await verifySignatureHeaders({
      secret,
      method: c.req.method,
      path: `${url.pathname}${url.search}`,
      headers: (name) => c.req.header(name),
    });
    if (!signed.ok) throw unauthorized(signed.code, signed.message);
    // The nonces live in memory (a Worker has no disk): a heartbeat stamped before this edge
    // started may have been accepted by the process before it, so it is refused.
    if (Number(c.req.header(SIGNATURE_HEADERS.timestamp)) < Math.floor(deps.startedAt / 1000))
      throw unauthorized("signature_replayed", "The heartbeat was signed before this edge started.");
    const body = await readBounded(c.req.raw.body, HEARTBEAT_BODY_BYTES);
    if (!body) throw tooBig();
    const verdict = verifySignedBody(signed, await sha256Hex(body), nonces);
    if (!verdict.ok) throw unauthorized(verdict.code, verdict.message);
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder().decode(body));
    } catch {
      throw badRequest("invalid_json", "The heartbeat is not valid JSON.");
    }
    const beat = heartbeatSchema.parse(json);
    const [previous] = await deps.db.select().from(gpuNodes).where(eq(gpuNodes.id, beat.id));
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
    const change: "joined" | "up" | "down" | "same" = !previous
      ? "joined"
      : previous.status === "down" && row.status === "up"
        ? "up"
        : previous.status === "up" && row.status === "down"
          ? "down"
          : previous.url !== row.url
            ? "up"
            : "same";
    if (isGpuPool(deps.gpu)) deps.gpu.heartbeatReceived(row, change);
    const intervalMs = isGpuPool(deps.gpu) ? deps.gpu.settings.heartbeatMs : undefined;
    return c.json({ node: { id: row.id, status: row.status }, ...(intervalMs ? { intervalMs } : {}) }, 200);
  });
}

/** Registered nodes with liveness, tiers and this edge's per-node metrics. */
export async function describeNodes(deps: Pick<Deps, "db" | "gpu">) {
  if (!isGpuPool(deps.gpu))
    return (await listNodes(deps.db)).map((row) => ({ ...row, live: row.status === "up" }));
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
      tiers: { hot: n.hot, warm: n.warm, coldCount: n.coldCount },
      queueDepth: n.queueDepth,
      metrics: pool.metrics(n.id),
      createdAt: row?.createdAt ?? null,
    };
  });
}

function requirePool(deps: Deps): GpuPool {
  if (!isGpuPool(deps.gpu))
    throw unavailable("cluster_unavailable", "This edge does not run a GPU node pool.");
  return deps.gpu;
}

/** Per-node metrics in the Prometheus text format. */
function prometheus(pool: GpuPool, nodes: { id: string; live: boolean }[]): string {
  const lines: string[] = [];
  const metric = (name: string, help: string, type: string, rows: [Record<string, string>, number][]) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of rows) {
      const l = Object.entries(labels)
        .map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, "_")}"`)
        .join(",");
      lines.push(`${name}{${l}} ${value}`);
    }
  };
  const per = (f: (m: ReturnType<GpuPool["metrics"]>) => number) =>
    nodes.map((n): [Record<string, string>, number] => [{ node: n.id }, f(pool.metrics(n.id))]);
  metric(
    "kvgraft_edge_node_up",
    "1 when the node is live.",
    "gauge",
    nodes.map((n) => [{ node: n.id }, n.live ? 1 : 0]),
  );
  metric(
    "kvgraft_edge_node_requests_total",
    "Calls sent to the node.",
    "counter",
    per((m) => m.requests),
  );
  metric(
    "kvgraft_edge_node_failures_total",
    "Calls to the node that failed.",
    "counter",
    per((m) => m.failures),
  );
  metric(
    "kvgraft_edge_node_failovers_total",
    "Calls retried elsewhere after failing here.",
    "counter",
    per((m) => m.failovers),
  );
  metric(
    "kvgraft_edge_node_grafts_total",
    "Grafts routed to the node, by the tier the route chose.",
    "counter",
    nodes.flatMap((n) =>
      (["hot", "warm", "cold"] as const).map((tier): [Record<string, string>, number] => [
        { node: n.id, tier },
        pool.metrics(n.id).grafts[tier],
      ]),
    ),
  );
  metric(
    "kvgraft_edge_node_copies_in_total",
    "Block copies received.",
    "counter",
    per((m) => m.copiesIn),
  );
  metric(
    "kvgraft_edge_node_copies_out_total",
    "Block copies sent.",
    "counter",
    per((m) => m.copiesOut),
  );
  metric(
    "kvgraft_edge_node_copy_bytes_in_total",
    "Bytes of block copies received.",
    "counter",
    per((m) => m.bytesIn),
  );
  metric(
    "kvgraft_edge_node_drops_total",
    "Surplus copies removed.",
    "counter",
    per((m) => m.drops),
  );
  metric(
    "kvgraft_edge_node_latency_seconds_total",
    "Time spent in calls to the node.",
    "counter",
    per((m) => m.latencyMsSum / 1000),
  );
  return `${lines.join("\n")}\n`;
}

/** Cluster views under `/admin` (the app mounts them before the other admin routes). */
export function nodeAdminRoutes(deps: Deps): Hono<AppEnv> {
  return new Hono<AppEnv>()
    .get("/nodes/metrics", async (c) => {
      const pool = requirePool(deps);
      const nodes = await pool.nodes();
      return c.body(prometheus(pool, nodes), 200, {
        "content-type": "text/plain; version=0.0.4; charset=utf-8",
      });
    })
    .get("/blocks/:id/placement", async (c) => {
      const id = sha256Schema.safeParse(c.req.param("id"));
      if (!id.success) throw notFound("block_not_found", "No block with this SHA-256.");
      const placement = await requirePool(deps).placement(id.data);
      if (!placement.known) throw notFound("block_not_found", "No block with this SHA-256.");
      return c.json({ placement }, 200);
    })
    .get("/rebalance", (c) => c.json({ rebalance: requirePool(deps).rebalancer.status() }, 200))
    .post("/rebalance", async (c) => {
      const report = await requirePool(deps).rebalancer.run("admin");
      return c.json({ report }, 200);
    });
}
