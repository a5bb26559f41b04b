/**
 * The processes of a scale-out run: one `kvgraft serve edge` and N `kvgraft serve gpu` nodes that
 * register with it through signed heartbeats, each node with its own data directory, port, log
 * and (on a multi-GPU host) its own device. Nodes can be stopped (drain), killed (SIGKILL) and
 * started again with the same id and data directory. Everything is read through the edge's admin
 * API, except the nodes' own tier counters (their signed /metrics).
 */
import { randomBytes } from "node:crypto";
import { createWriteStream, existsSync, mkdirSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import { createGpuClient } from "../../shared/gpu-client.js";
import { type Health, healthSchema } from "../../shared/protocol.js";
import { kvgraftSameEntryArgs, readyUrl, type Supervised, supervise } from "../../tools/process/supervise.js";
import { edgeReady } from "../load-bench.js";

export interface ClusterOptions {
  dataDir: string;
  modelPath: string;
  /** Node ids, in start order. */
  nodeIds: string[];
  /** CUDA_VISIBLE_DEVICES of each node, by position (none: the nodes inherit the environment's). */
  devices?: string[];
  /** `serve gpu --slots` (hot-tier sequences); default the node's. */
  slots?: string;
  /** `serve gpu --context`; default the node's. */
  contextSize?: number;
  heartbeatMs: number;
  /** The environment the processes inherit. */
  env: Record<string, string | undefined>;
  /** Node arguments that run kvgraft (default: the same entry as this process). */
  kvgraftArgs?: (...args: string[]) => string[];
  log?: (line: string) => void;
}

/** A registered node as the edge's `GET /admin/nodes` shows it (the fields used here). */
export interface NodeView {
  id: string;
  live: boolean;
  lastHeartbeatAt: string | null;
  capacity: { slots?: number };
  metrics?: { requests: number; failures: number; failovers: number; grafts: Record<string, number> };
}

/** Restores per tier counted by the nodes themselves (`kvgraft_tier_hits_total`). */
export type TierHits = { hot: number; warm: number; cold: number };

export interface Cluster {
  edgeUrl: string;
  key: string;
  /** An admin call through the edge; the body is parsed JSON (null when not JSON). */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }>;
  /** The registered nodes. */
  nodes(): Promise<NodeView[]>;
  /** Starts (or restarts) a node; resolves once it printed its ready line. */
  startNode(id: string): Promise<void>;
  /** SIGTERM (drain) and wait for the exit. */
  stopNode(id: string): Promise<void>;
  /** SIGKILL and wait for the exit. */
  killNode(id: string): Promise<void>;
  /**
   * Waits until the edge sees exactly these nodes live, each on a heartbeat sent after `sinceMs`
   * (wall clock) when given: a node restarted since is then known at its new URL.
   */
  waitLive(ids: string[], sinceMs?: number): Promise<void>;
  /** Each running node's tier counters, asked directly (signed). */
  tierHits(): Promise<Record<string, TierHits>>;
  /** A running node's own `GET /health` (its tiers and warm start). */
  health(id: string): Promise<Health>;
  /**
   * Waits until warm start has finished on each of these nodes (`/health` `warmStart.state` done
   * or off); resolves with the wall clock (ms) at which the last one was seen done.
   */
  waitWarmStart(ids: string[]): Promise<number>;
  /** Signed clients of the running nodes. */
  client(id: string): ReturnType<typeof createGpuClient>;
  /** Stops everything; the edge's exit code. */
  close(): Promise<number | null>;
}

// biome-ignore lint/suspicious/noExplicitAny: admin answers are read field by field where used
export type Json = any;

/** A mistake in what the run was asked to do (the CLI reports it as a usage error). */
export class ScaleOutSetupError extends Error {}

const STOP_GRACE_MS = 60_000;
const READY_TIMEOUT_MS = 600_000;

/** Starts the edge and every node, and waits until all nodes are registered and live. */
export async function startCluster(o: ClusterOptions): Promise<Cluster> {
  // The edge prints a new admin key only for a new database: a directory of an earlier run would
  // also mix its blocks into this one's.
  if (existsSync(join(o.dataDir, "edge.db")))
    throw new ScaleOutSetupError(
      `${o.dataDir} holds an earlier scale-out run (edge.db): give a fresh --data-dir`,
    );
  mkdirSync(o.dataDir, { recursive: true });
  const args = o.kvgraftArgs ?? kvgraftSameEntryArgs;
  const secret = randomBytes(24).toString("hex");
  const logs: WriteStream[] = [];
  const logFile = (name: string) => {
    const stream = createWriteStream(join(o.dataDir, name), { flags: "a" });
    logs.push(stream);
    return stream;
  };
  const { KVGRAFT_GPU_URL: _static, ...inherited } = o.env;
  const edge = supervise({
    name: `kvgraft serve edge (see ${join(o.dataDir, "edge.log")})`,
    args: args("serve", "edge", "--port", "0", "--db", `file:${join(o.dataDir, "edge.db")}`, "--json"),
    env: {
      ...inherited,
      KVGRAFT_GPU_SECRET: secret,
      KVGRAFT_REPLICAS: String(Math.min(2, o.nodeIds.length)),
      KVGRAFT_HEARTBEAT_MS: String(o.heartbeatMs),
      KVGRAFT_RATE_LIMIT: "1000000",
      // The measured requests alone: no background re-solving, and no log line per request.
      KVGRAFT_FLYWHEEL: "off",
      KVGRAFT_LOG_LEVEL: o.env.KVGRAFT_LOG_LEVEL ?? "warn",
    },
    ready: edgeReady,
    readyTimeoutMs: READY_TIMEOUT_MS,
    stderr: logFile("edge.log"),
    ipc: true,
  });
  const { url: edgeUrl, key } = await edge.ready;
  o.log?.(`edge up at ${edgeUrl}`);

  const running = new Map<string, { served: Supervised<string>; url: string }>();
  const clients = new Map<string, ReturnType<typeof createGpuClient>>();
  const startNode = async (id: string) => {
    const i = o.nodeIds.indexOf(id);
    if (i < 0) throw new Error(`unknown node ${id}`);
    const device = o.devices?.[i];
    const served = supervise({
      name: `kvgraft serve gpu ${id} (see ${join(o.dataDir, `${id}.log`)})`,
      args: args(
        ...["serve", "gpu", "--model", o.modelPath, "--port", "0", "--data-dir", join(o.dataDir, id)],
        ...["--node-id", id, "--edge-url", edgeUrl, "--heartbeat-ms", String(o.heartbeatMs), "--json"],
        ...(o.slots ? ["--slots", o.slots] : []),
        ...(o.contextSize ? ["--context", String(o.contextSize)] : []),
      ),
      env: {
        ...inherited,
        KVGRAFT_GPU_SECRET: secret,
        KVGRAFT_LOG_LEVEL: o.env.KVGRAFT_LOG_LEVEL ?? "warn",
        ...(device !== undefined ? { CUDA_VISIBLE_DEVICES: device } : {}),
      },
      ready: readyUrl,
      readyTimeoutMs: READY_TIMEOUT_MS,
      stderr: logFile(`${id}.log`),
      ipc: true,
    });
    const url = await served.ready;
    running.set(id, { served, url });
    clients.set(id, createGpuClient({ baseUrl: url, secret }));
    o.log?.(`node ${id} up at ${url}${device !== undefined ? ` (CUDA_VISIBLE_DEVICES=${device})` : ""}`);
  };
  const ended = async (id: string, how: (s: Supervised<string>) => Promise<unknown>) => {
    const node = running.get(id);
    if (!node) return;
    running.delete(id);
    clients.delete(id);
    await how(node.served);
  };

  const admin: Cluster["admin"] = async (method, path, body) => {
    const res = await fetch(`${edgeUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(600_000),
    });
    return { status: res.status, body: await res.json().catch(() => null) };
  };
  const nodes = async (): Promise<NodeView[]> => {
    const r = await admin("GET", "/admin/nodes");
    if (r.status !== 200) throw new Error(`GET /admin/nodes: HTTP ${r.status}`);
    return r.body.nodes as NodeView[];
  };
  const waitLive = async (ids: string[], sinceMs = 0) => {
    const want = [...ids].sort().join(",");
    const end = Date.now() + 120_000;
    for (;;) {
      const views = await nodes();
      const live = views
        .filter((n) => n.live)
        .map((n) => n.id)
        .sort()
        .join(",");
      const fresh = views.every(
        (n) => !ids.includes(n.id) || (n.lastHeartbeatAt !== null && Date.parse(n.lastHeartbeatAt) > sinceMs),
      );
      if (live === want && fresh) return;
      if (Date.now() > end) throw new Error(`live nodes are [${live}], expected [${want}]`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const health = async (id: string): Promise<Health> => {
    const node = running.get(id);
    if (!node) throw new Error(`node ${id} is not running`);
    const res = await fetch(`${node.url}/health`, { signal: AbortSignal.timeout(30_000) });
    return healthSchema.parse(await res.json());
  };
  const waitWarmStart = async (ids: string[]): Promise<number> => {
    const end = Date.now() + READY_TIMEOUT_MS;
    for (const id of ids)
      for (;;) {
        const state = (await health(id)).warmStart?.state ?? "off";
        if (state === "done" || state === "off") break;
        if (Date.now() > end)
          throw new Error(`warm start of ${id} still ${state} after ${READY_TIMEOUT_MS} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    return Date.now();
  };

  const cluster: Cluster = {
    edgeUrl,
    key,
    admin,
    nodes,
    startNode,
    stopNode: (id) => ended(id, (s) => s.stop(STOP_GRACE_MS)),
    killNode: (id) =>
      ended(id, (s) => {
        s.child.kill("SIGKILL");
        return s.exited;
      }),
    waitLive,
    health,
    waitWarmStart,
    tierHits: async () => {
      const out: Record<string, TierHits> = {};
      await Promise.all(
        [...clients].map(async ([id, client]) => {
          out[id] = parseTierHits(await client.metrics());
        }),
      );
      return out;
    },
    client: (id) => {
      const c = clients.get(id);
      if (!c) throw new Error(`node ${id} is not running`);
      return c;
    },
    close: async () => {
      await Promise.all([...running.keys()].map((id) => ended(id, (s) => s.stop(STOP_GRACE_MS))));
      const { code } = await edge.stop(STOP_GRACE_MS);
      for (const log of logs) log.end();
      return code;
    },
  };
  try {
    await Promise.all(o.nodeIds.map(startNode));
    await waitLive(o.nodeIds);
  } catch (err) {
    await cluster.close();
    throw err;
  }
  return cluster;
}

/** `kvgraft_tier_hits_total{tier="..."} N` lines of a node's Prometheus text. */
export function parseTierHits(text: string): TierHits {
  const hits: TierHits = { hot: 0, warm: 0, cold: 0 };
  for (const m of text.matchAll(/^kvgraft_tier_hits_total\{tier="(hot|warm|cold)"\} (\S+)$/gm))
    hits[m[1] as keyof TierHits] = Number(m[2]);
  return hits;
}
