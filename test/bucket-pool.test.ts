/**
 * A pool of three `kvgraft serve gpu` processes sharing a bucket (s3rver on loopback) behind a
 * real edge, R = 2: each desired node that lacks a deposited block fetches it from the bucket (a
 * prefetch hint), not by a copy between nodes; with both holders killed, a
 * rebalance has the remaining node fetch it from the bucket and the pool grafts it there.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GpuPool } from "../edge/cluster/gpu-pool.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { createGpuClient, type GpuNodeClient } from "../shared/gpu-client.js";
import { createLogger } from "../shared/http/logger.js";
import { kvgraftSourceArgs, supervise } from "../tools/process/supervise.js";
import { syntheticModel } from "./helpers/models.js";
import { startS3Server, type TestBucketServer } from "./helpers/s3-server.js";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

const root = join(import.meta.dirname, "..");
const SECRET = "bucket-pool-secret-0123456789abc";
const HEARTBEAT_MS = 250;
const work = mkdtempSync(join(tmpdir(), "kvgraft-bucket-pool-"));
const IDS = ["gpu-a", "gpu-b", "gpu-c"];
const nodes = new Map<string, { child: ChildProcess; client: GpuNodeClient; exited: Promise<unknown> }>();
let s3: TestBucketServer;
let edge: EdgeServer;
let pool: GpuPool;
let adminKey: string;

async function startNode(id: string): Promise<void> {
  const served = supervise({
    name: `node ${id}`,
    args: kvgraftSourceArgs(
      ...["serve", "gpu", "--model", syntheticModel("tiny-llama"), "--port", "0", "--context", "1024"],
      ...["--data-dir", join(work, id), "--node-id", id, "--edge-url", edge.url],
      ...["--heartbeat-ms", String(HEARTBEAT_MS), "--json"],
    ),
    cwd: root,
    env: {
      ...process.env,
      KVGRAFT_GPU_SECRET: SECRET,
      KV_THREADS: "1",
      KVGRAFT_BUCKET_URL: s3.config.url,
      KVGRAFT_BUCKET_ACCESS_KEY_ID: s3.config.accessKeyId,
      KVGRAFT_BUCKET_SECRET_ACCESS_KEY: s3.config.secretAccessKey,
      KVGRAFT_BUCKET_REGION: s3.config.region,
    },
    ready: (line) => (line as { url: string }).url,
  });
  const url = await served.ready;
  nodes.set(id, {
    child: served.child,
    client: createGpuClient({ baseUrl: url, secret: SECRET }),
    exited: served.exited,
  });
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${edge.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${adminKey}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Json };
}

const liveCount = async () => (await pool.nodes(true)).filter((n) => n.live).length;
const holds = async (id: string, blockId: string) =>
  (await (nodes.get(id)?.client.listBlocks() ?? Promise.resolve([]))).some((m) => m.sha256 === blockId);

// Deposits run the solution's program in each node's sandbox.

beforeAll(async () => {
  s3 = await startS3Server();
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(work, "edge.db")}`,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_REPLICAS: "2",
      KVGRAFT_HEARTBEAT_MS: String(HEARTBEAT_MS),
      KVGRAFT_HEARTBEAT_DOWN_AFTER: "4",
      KVGRAFT_REBALANCE_INTERVAL_MS: "0",
      KVGRAFT_GPU_TIMEOUT_MS: "60000",
    },
    port: 0,
    logger: createLogger({ level: "error" }),
  });
  pool = edge.gpu;
  adminKey = edge.generatedAdminKey as string;
  await Promise.all(IDS.map(startNode));
  await until("three live nodes", async () => (await liveCount()) === 3);
}, 180_000);

afterAll(async () => {
  for (const { child } of nodes.values())
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await edge?.close();
  await s3?.stop();
  rmSync(work, { recursive: true, force: true });
}, 60_000);

describe("a pool sharing a bucket", () => {
  it("places the block by bucket fetches, not copies between nodes, and survives losing both holders", async () => {
    const deposited = await admin("POST", "/admin/solutions", {
      problem: "Crate 4 holds 7 boxes of 11 pens each. How many pens are in crate 4?",
      solution: "There are 7 × 11 = 77 pens.",
      program: "a, b, c, d = PARAMS\nprint(int(b * c))\n",
      answer: "77",
    });
    expect(deposited.status, JSON.stringify(deposited.body)).toBe(201);
    const blockId = deposited.body.block.sha256 as string;
    const origin = deposited.body.block.nodeId as string;
    const placed = (await admin("GET", `/admin/blocks/${blockId}/placement`)).body.placement;
    const holders = placed.holders.map((h: Json) => h.nodeId).sort();
    expect(holders).toEqual([...placed.desired].sort());
    expect(holders).toHaveLength(2);
    // The deposit's node is ranked by the text's hash, the desired set by the block's (the state
    // file's, which may differ between machines and llama.cpp builds): the origin may be outside it.
    // Every desired node but the origin fetched the block from the bucket, no node sent it to
    // another, and an origin outside the set dropped its copy once both desired nodes held it.
    const originDesired = placed.desired.includes(origin);
    const status = (await admin("GET", "/admin/rebalance")).body.rebalance;
    expect(status.bucketFetches).toBe(originDesired ? 1 : 2);
    for (const [id, m] of Object.entries(pool.allMetrics()))
      expect([id, m.copiesIn, m.copiesOut, m.bytesIn, m.drops]).toEqual([
        id,
        0,
        0,
        0,
        id === origin && !originDesired ? 1 : 0,
      ]);

    const survivor = IDS.find((id) => !holders.includes(id)) as string;
    expect(await holds(survivor, blockId)).toBe(false);
    for (const id of holders) {
      nodes.get(id)?.child.kill("SIGKILL");
      await nodes.get(id)?.exited;
    }
    await until("one live node", async () => (await liveCount()) === 1);
    const report = (await admin("POST", "/admin/rebalance")).body.report;
    expect(report.unavailable).toBe(0);
    expect(await holds(survivor, blockId)).toBe(true);
    const answer = await pool.graft({ blockId, query: " How many? Answer:", maxTokens: 4 });
    expect(answer.blockSha256).toBe(blockId);
  });
});
