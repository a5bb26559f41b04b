/**
 * Several GPU nodes behind one edge: three `kvgraft serve gpu` child processes with the same tiny
 * model (and a fourth with another model) register with an in-process edge through signed
 * heartbeats. Through the edge's admin API and its GPU pool: placement is stable and balanced, a
 * deposit lands on R = 2 nodes with identical bytes, a graft goes to the hot replica, killing a
 * node reroutes the graft to the other replica with the same output hash (and the extra latency
 * of the failover is reported), the rebalancer re-replicates and re-syncs a restarted node, a
 * node with other fingerprints never receives a block, a block a restarted node finds damaged at
 * its warm start loses that node's replica record and is copied back, and with no replica alive a
 * graft is a 503 `no_replica`.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GpuPool } from "../edge/cluster/gpu-pool.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { DomainError } from "../shared/errors.js";
import { createGpuClient, type GpuNodeClient } from "../shared/gpu-client.js";
import { sha256Hex } from "../shared/hash.js";
import { type Heartbeat, sendHeartbeat } from "../shared/heartbeat.js";
import { createLogger } from "../shared/http/logger.js";
import { CHUNK_SHA256_HEADER, LIMITS } from "../shared/protocol.js";
import { placementSpread, rendezvousPick } from "../shared/rendezvous.js";
import { createUploadGrant } from "../shared/upload-grant.js";
import { kvgraftSourceArgs, readyUrl, supervise } from "../tools/process/supervise.js";
import { syntheticModel } from "./helpers/models.js";

const root = join(import.meta.dirname, "..");
const SECRET = "multinode-secret-0123456789abcdef";
const HEARTBEAT_MS = 250;
const model = syntheticModel("tiny-llama");
const otherModel = syntheticModel("tiny-llama", "other-fingerprint");
const work = mkdtempSync(join(tmpdir(), "kvgraft-multinode-"));

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

interface Node {
  id: string;
  child: ChildProcess;
  url: string;
  client: GpuNodeClient;
  exited: Promise<unknown>;
  dataDir: string;
}

const children: ChildProcess[] = [];
let edge: EdgeServer;
let pool: GpuPool;
let adminKey: string;
const nodes = new Map<string, Node>();

/** Starts `serve gpu` registered with the edge; resolves once it printed its JSON ready line. */
async function startNode(id: string, modelPath: string, dataDir: string): Promise<Node> {
  const served = supervise({
    name: `node ${id}`,
    args: kvgraftSourceArgs(
      ...["serve", "gpu", "--model", modelPath, "--port", "0", "--data-dir", dataDir, "--context", "1024"],
      ...["--node-id", id, "--edge-url", edge.url, "--heartbeat-ms", String(HEARTBEAT_MS), "--json"],
    ),
    cwd: root,
    env: { ...process.env, KVGRAFT_GPU_SECRET: SECRET, KV_THREADS: "1" },
    ready: readyUrl,
  });
  children.push(served.child);
  const url = await served.ready;
  const node = {
    id,
    child: served.child,
    url,
    client: createGpuClient({ baseUrl: url, secret: SECRET }),
    exited: served.exited,
    dataDir,
  };
  nodes.set(id, node);
  return node;
}

function kill(id: string): Promise<unknown> {
  const node = nodes.get(id) as Node;
  node.child.kill("SIGKILL");
  return node.exited;
}

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
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

const liveIds = async () =>
  (await pool.nodes(true))
    .filter((n) => n.live)
    .map((n) => n.id)
    .sort();

/** Ids of the blocks a node holds (asked directly, signed). */
const holdings = async (id: string) =>
  new Set((await (nodes.get(id) as Node).client.listBlocks()).map((m) => m.sha256));

/** Deposits a verified solution through the admin API; returns the block id. */
async function deposit(i: number): Promise<string> {
  const r = await admin("POST", "/admin/solutions", {
    problem: `Crate ${i} holds ${i + 3} boxes of ${i + 7} pens each. How many pens are in crate ${i}?`,
    solution: `There are ${i + 3} × ${i + 7} = ${(i + 3) * (i + 7)} pens.`,
    program: "a, b, c, d = PARAMS\nprint(int(b * c))\n",
    answer: String((i + 3) * (i + 7)),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.block.sha256 as string;
}

async function placement(blockId: string): Promise<Json> {
  const r = await admin("GET", `/admin/blocks/${blockId}/placement`);
  expect(r.status).toBe(200);
  return r.body.placement;
}

const SAME = ["gpu-a", "gpu-b", "gpu-c"];
const blocks: string[] = [];

// Deposits check their programs in each node's sandbox, and the later tests build on them.

beforeAll(async () => {
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
  await Promise.all([
    ...SAME.map((id) => startNode(id, model, join(work, id))),
    startNode("gpu-odd", otherModel, join(work, "gpu-odd")),
  ]);
  await until("four live nodes", async () => (await liveIds()).length === 4);
}, 180_000);

afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await edge?.close();
  rmSync(work, { recursive: true, force: true });
}, 60_000);

describe("several GPU nodes behind one edge", () => {
  it("registers nodes with fingerprints, capacity and tiers from signed heartbeats", async () => {
    const r = await admin("GET", "/admin/nodes");
    expect(r.status).toBe(200);
    const byId = new Map<string, Json>(r.body.nodes.map((n: Json) => [n.id, n]));
    expect([...byId.keys()].sort()).toEqual(["gpu-a", "gpu-b", "gpu-c", "gpu-odd"]);
    const a = byId.get("gpu-a") as Json;
    expect(a).toMatchObject({
      status: "up",
      live: true,
      url: nodes.get("gpu-a")?.url,
      capacity: { slots: 2 },
    });
    expect(a.tiers).toMatchObject({ hot: [], coldCount: 0 });
    expect(a.modelFingerprint).toBe(byId.get("gpu-b")?.modelFingerprint);
    expect(a.engineFingerprint).toBe(byId.get("gpu-c")?.engineFingerprint);
    expect(byId.get("gpu-odd")?.modelFingerprint).not.toBe(a.modelFingerprint);

    // An unsigned heartbeat, or one signed with another secret, is refused.
    const unsigned = await fetch(`${edge.url}/cluster/heartbeat`, { method: "POST", body: "{}" });
    expect(unsigned.status).toBe(401);
    const health = await (nodes.get("gpu-a") as Node).client.health();
    const beat: Heartbeat = {
      id: "gpu-forged",
      url: "http://127.0.0.1:1",
      status: "ok" as const,
      model: health.model,
      engine: health.engine,
      capacity: { slots: 2, queueCapacity: 6, tiers: ["hot", "warm", "cold"] },
      tiers: { hot: [], warm: [], coldCount: 0 },
      queue: { depth: 0, capacity: 6 },
    };
    await expect(
      sendHeartbeat({ edgeUrl: edge.url, secret: "not-the-secret-0123456789" }, beat),
    ).rejects.toThrow(/HTTP 401/);
    expect((await admin("GET", "/admin/nodes")).body.nodes.some((n: Json) => n.id === "gpu-forged")).toBe(
      false,
    );
  });

  it("places blocks stably and evenly (rendezvous over the live nodes of one fingerprint)", async () => {
    const keys = await Promise.all(Array.from({ length: 1000 }, (_, i) => sha256Hex(`block-${i}`)));
    const live = (await liveIds()).filter((id) => id !== "gpu-odd");
    expect(live).toEqual(SAME);
    const spread = placementSpread(keys, live, 2);
    console.log(`placement spread, 1000 blocks, R=2, ${live.length} nodes: ${JSON.stringify(spread)}`);
    expect(spread.peakToMean).toBeLessThan(1.1);
    for (const key of keys.slice(0, 50))
      expect(rendezvousPick(key, [...live].reverse(), 2)).toEqual(rendezvousPick(key, live, 2));
  });

  it("a deposit lands on its R nodes with identical bytes, never on the other fingerprint", async () => {
    for (let i = 0; i < 4; i++) blocks.push(await deposit(i));
    for (const id of blocks) {
      const p = await placement(id);
      expect(p.desired).toHaveLength(2);
      expect(p.missing).toEqual([]);
      expect(p.holders.map((h: Json) => h.nodeId).sort()).toEqual([...p.desired].sort());
      for (const holder of p.desired as string[]) {
        const { manifest, body } = await (nodes.get(holder) as Node).client.openBlockFile(id);
        const bytes = new Uint8Array(await new Response(body).arrayBuffer());
        expect(await sha256Hex(bytes)).toBe(id);
        expect(manifest.sha256).toBe(id);
      }
      const third = SAME.find((n) => !p.desired.includes(n)) as string;
      expect((await holdings(third)).has(id)).toBe(false);
    }
    expect((await holdings("gpu-odd")).size).toBe(0);
    // Over four blocks every same-fingerprint node holds something only if HRW says so.
    const counts = await Promise.all(SAME.map(async (id) => (await holdings(id)).size));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(2 * blocks.length);
  });

  it("a node accepts the edge's upload grant on its import routes, for that one block only", async () => {
    const id = blocks[3] as string;
    const p = await placement(id);
    const third = nodes.get(SAME.find((n) => !p.desired.includes(n)) as string) as Node;
    const { manifest, body } = await (nodes.get(p.desired[0]) as Node).client.openBlockFile(id);
    const bytes = new Uint8Array(await new Response(body).arrayBuffer());
    const claims = {
      v: 1 as const,
      jti: "0".repeat(32),
      sha256: id,
      sizeBytes: bytes.length,
      problemId: "any",
      exp: Math.floor(Date.now() / 1000) + 60,
      keyId: "key",
    };
    const grant = await createUploadGrant(SECRET, claims);
    const send = (path: string, token: string, init: RequestInit = {}) =>
      fetch(`${third.url}${path}`, {
        ...init,
        headers: { authorization: `KvgraftUpload ${token}`, ...(init.headers as Record<string, string>) },
      });
    const start = (token: string) =>
      send("/v1/imports", token, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ manifest, sizeBytes: bytes.length, chunkBytes: LIMITS.importChunkBytes }),
      });
    expect((await send("/v1/blocks", grant)).status).toBe(403);
    expect((await start(await createUploadGrant("another-secret-0123456789", claims))).status).toBe(401);
    const expired = await createUploadGrant(SECRET, { ...claims, exp: Math.floor(Date.now() / 1000) - 1 });
    expect((await start(expired)).status).toBe(401);
    const wrong = await start(await createUploadGrant(SECRET, { ...claims, sha256: blocks[0] as string }));
    expect(wrong.status).toBe(403);
    expect(((await wrong.json()) as Json).error.code).toBe("grant_mismatch");

    const started = await start(grant);
    expect(started.status).toBe(201);
    const { importId, chunkCount } = (await started.json()) as { importId: string; chunkCount: number };
    for (let i = 0; i < chunkCount; i++) {
      const chunk = bytes.subarray(i * LIMITS.importChunkBytes, (i + 1) * LIMITS.importChunkBytes);
      const put = await send(`/v1/imports/${importId}/chunks/${i}`, grant, {
        method: "PUT",
        headers: {
          "content-type": "application/octet-stream",
          [CHUNK_SHA256_HEADER]: await sha256Hex(chunk),
        },
        body: chunk,
      });
      expect(put.status).toBe(200);
    }
    const committed = await send(`/v1/imports/${importId}/commit`, grant, { method: "POST" });
    expect(committed.status).toBe(201);
    expect(((await committed.json()) as Json).sha256).toBe(id);
    expect((await holdings(third.id)).has(id)).toBe(true);
    // Leave placement as it was.
    await third.client.deleteBlock(id);
  });

  it("a graft goes to the replica where the block is hot", async () => {
    const id = blocks[0] as string;
    const p = await placement(id);
    const [first, second] = p.desired as [string, string];
    // Make the block hot on the replica rendezvous ranks second, and only there: two plain
    // generations at once take both slots of the first replica (evicting what was resident), and
    // a prefetch restores the block into a slot of the second.
    const f = nodes.get(first) as Node;
    await Promise.all([1, 2].map(() => f.client.generate({ prompt: "Count: one two", maxTokens: 4 })));
    expect(await (nodes.get(second) as Node).client.prefetch(id, "hot")).toBe("hot");
    await until("the heartbeat to report the tiers", async () => {
      const view = await pool.nodes(true);
      const s = view.find((n) => n.id === second);
      const r = view.find((n) => n.id === first);
      return s?.hot.includes(id) && !r?.hot.includes(id);
    });
    const routed = await pool.graftRouted({ blockId: id, query: "How many pens?", maxTokens: 8 });
    expect(routed.nodeId).toBe(second);
    expect(routed.tier).toBe("hot");
    expect(routed.result.tier).toBe("hot");
    expect(routed.attempts).toHaveLength(1);
  });

  let failoverBlock: string;
  let reference: { nodeId: string; outputSha256: string; ms: number };

  it("a node killed mid-graft: the edge retries on the other replica, same output hash", async () => {
    failoverBlock = blocks[1] as string;
    // A long greedy graft, so the node can be killed while it decodes.
    const req = { blockId: failoverBlock, query: "List the pens one by one:", maxTokens: 600 };
    // The block hot on both replicas, so both attempts restore the same way.
    for (const n of (await placement(failoverBlock)).desired as string[])
      expect(await (nodes.get(n) as Node).client.prefetch(failoverBlock, "hot")).toBe("hot");
    const warm = await pool.graftRouted(req);
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const r = await pool.graftRouted(req);
      times.push(performance.now() - t0);
      expect(r.nodeId).toBe(warm.nodeId);
      expect(r.result.outputSha256).toBe(warm.result.outputSha256);
    }
    const normalMs = times.sort((a, b) => a - b)[1] as number;
    // The survivor's own latency for the same graft (asked directly): the baseline of the retry.
    const survivor = ((await placement(failoverBlock)).desired as string[]).find(
      (n) => n !== warm.nodeId,
    ) as string;
    const direct: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      const r = await (nodes.get(survivor) as Node).client.graft(req);
      direct.push(performance.now() - t);
      expect(r.outputSha256).toBe(warm.result.outputSha256);
    }
    const survivorMs = direct.sort((a, b) => a - b)[1] as number;
    reference = { nodeId: warm.nodeId, outputSha256: warm.result.outputSha256, ms: normalMs };

    const t0 = performance.now();
    const pending = pool.graftRouted(req);
    const serving = nodes.get(warm.nodeId) as Node;
    await until(
      "the graft to be running",
      async () => (await serving.client.health()).slots.busy > 0,
      10_000,
    );
    const killedAt = performance.now() - t0;
    await kill(warm.nodeId);
    const routed = await pending;
    const failoverMs = performance.now() - t0;
    expect(routed.attempts).toHaveLength(2);
    expect(routed.attempts[0]).toMatchObject({ nodeId: warm.nodeId, error: expect.any(String) });
    expect(routed.nodeId).toBe(survivor);
    expect(routed.result.outputSha256).toBe(reference.outputSha256);
    expect(routed.result.tokensOut).toBe(warm.result.tokensOut);
    const failed = routed.attempts[0] as { ms: number };
    const retried = routed.attempts[1] as { ms: number };
    console.log(
      `failover (${warm.result.tokensOut} tokens, node killed mid-graft): normal graft ${normalMs.toFixed(1)} ms ` +
        `(survivor direct ${survivorMs.toFixed(1)} ms); killed ${killedAt.toFixed(1)} ms in, failure seen ` +
        `${(failed.ms - killedAt).toFixed(1)} ms after the kill, retry ${retried.ms.toFixed(1)} ms; answered after ` +
        `${failoverMs.toFixed(1)} ms: ${(failoverMs - normalMs).toFixed(1)} ms more than a normal graft`,
    );
    // The dead node is out of routing now: the next graft goes straight to the survivor.
    const next = await pool.graftRouted({ ...req, maxTokens: 8 });
    expect(next.attempts).toHaveLength(1);
    expect(next.nodeId).toBe(survivor);
    expect(pool.metrics(warm.nodeId).failovers).toBeGreaterThanOrEqual(1);
  });

  it("re-replicates onto the surviving nodes, then re-syncs the restarted node (moving copies back)", async () => {
    const dead = reference.nodeId;
    const survivors = SAME.filter((n) => n !== dead);
    await until("the dead node to count as down", async () => !(await liveIds()).includes(dead));
    // Every block is back on two live nodes (both survivors, since only two are left).
    const report = await pool.rebalancer.run("test");
    expect(report.failed).toEqual([]);
    for (const id of blocks) {
      const p = await placement(id);
      expect(p.desired.sort()).toEqual(survivors);
      for (const n of survivors) expect((await holdings(n)).has(id)).toBe(true);
    }
    expect(pool.rebalancer.status().maxConcurrentTransfers).toBeLessThanOrEqual(
      pool.settings.transferConcurrency,
    );
    // Progress and the last report are visible to admins.
    const progress = await admin("GET", "/admin/rebalance");
    expect(progress.status).toBe(200);
    expect(progress.body.rebalance.last).toMatchObject({ failed: [], finishedAt: expect.any(String) });
    expect(progress.body.rebalance.runs).toBeGreaterThan(0);

    // The node comes back with an empty disk under the same id: the rebalancer copies to it what
    // rendezvous hashing assigns it again, and removes the copies that moved back.
    await startNode(dead, model, join(work, `${dead}-restarted`));
    await until("the restarted node to be live", async () => (await liveIds()).includes(dead));
    const expected = new Map(blocks.map((id) => [id, rendezvousPick(id, SAME, 2).sort()]));
    await until(
      "the restarted node to be re-synced",
      async () => {
        for (const [id, want] of expected) {
          const p = await placement(id);
          const have = p.holders
            .filter((h: Json) => h.live)
            .map((h: Json) => h.nodeId)
            .sort();
          if (JSON.stringify(have) !== JSON.stringify(want)) return false;
        }
        return true;
      },
      60_000,
    );
    for (const n of SAME) {
      const held = await holdings(n);
      for (const [id, want] of expected) expect(held.has(id)).toBe(want.includes(n));
    }
    // The copy it received answers with the same output.
    const back = [...expected].find(([, want]) => want.includes(dead))?.[0];
    if (back) {
      const r = await (nodes.get(dead) as Node).client.graft({
        blockId: back,
        query: "How many pens?",
        maxTokens: 4,
      });
      expect(r.blockSha256).toBe(back);
    }
    expect(pool.metrics(dead).copiesIn).toBeGreaterThan(0);
  });

  it("a block a restarted node finds damaged at warm start leaves its replica record; the rebalancer copies it back", async () => {
    const id = blocks[0] as string;
    const holder = ((await placement(id)).holders as Json[]).find((h) => h.live)?.nodeId as string;
    const node = nodes.get(holder) as Node;
    node.child.kill("SIGTERM");
    await node.exited;
    const path = join(node.dataDir, "blocks", `${id}.state`);
    const bytes = readFileSync(path);
    const at = Math.floor(bytes.length / 2);
    bytes[at] = (bytes[at] ?? 0) ^ 0x01;
    writeFileSync(path, bytes);
    await startNode(holder, model, node.dataDir);
    // Warm start quarantines the file; the next heartbeat says so and the edge drops the record.
    await until("the damaged replica's record to go", async () => {
      const holders = (await placement(id)).holders as Json[];
      return (await liveIds()).includes(holder) && !holders.some((h) => h.nodeId === holder);
    });
    expect((await holdings(holder)).has(id)).toBe(false);
    const report = await pool.rebalancer.run("test");
    expect(report.failed).toEqual([]);
    expect((await holdings(holder)).has(id)).toBe(true);
    expect(((await placement(id)).holders as Json[]).some((h) => h.nodeId === holder)).toBe(true);
    // The sound copy stays recorded: heartbeats after it no longer report the block damaged.
    await new Promise((r) => setTimeout(r, HEARTBEAT_MS * 6));
    expect(((await placement(id)).holders as Json[]).some((h) => h.nodeId === holder)).toBe(true);
  });

  it("never gives a block to the node with other fingerprints; exposes per-node metrics", async () => {
    expect((await holdings("gpu-odd")).size).toBe(0);
    const metrics = await fetch(`${edge.url}/admin/nodes/metrics`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
    const text = await metrics.text();
    expect(text).toMatch(/kvgraft_edge_node_up\{node="gpu-odd"\} 1/);
    expect(text).toMatch(/kvgraft_edge_node_copies_in_total\{node="gpu-/);
    expect(text).not.toMatch(/kvgraft_edge_node_copies_in_total\{node="gpu-odd"\} [1-9]/);
  });

  it("with no replica alive a graft is a 503 no_replica; a draining node leaves routing at once", async () => {
    const id = blocks[2] as string;
    const holders = (await placement(id)).desired as string[];
    await Promise.all(holders.map((n) => kill(n)));
    await until("both replicas to count as down", async () => {
      const live = await liveIds();
      return holders.every((n) => !live.includes(n));
    });
    const err = await pool
      .graft({ blockId: id, query: "How many pens?", maxTokens: 4 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ status: 503, code: "no_replica" });

    // SIGTERM: the node's last heartbeat says it is draining, and the edge marks it down.
    const last = SAME.find((n) => !holders.includes(n)) as string;
    (nodes.get(last) as Node).child.kill("SIGTERM");
    await until("the draining heartbeat", async () => {
      const r = await admin("GET", "/admin/nodes");
      const row = r.body.nodes.find((n: Json) => n.id === last);
      return row?.status === "down" && row.health.status === "draining" && !row.live;
    });
  });
});
