/**
 * The single-node setup of `npm start`: one `kvgraft serve gpu` child process (generated tiny
 * model) that sends no heartbeats, configured on the edge by URL (KVGRAFT_GPU_URL, a pool of one).
 * The admin views must say what the node says: `/admin/nodes` shows the tiers of the node's own
 * `/health`, and the rebalancer counts the node as live.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerBlock, registerProblem } from "../edge/db/library.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { blockInput } from "../edge/services/admin.service.js";
import { silentLogger } from "../shared/http/logger.js";
import { healthSchema } from "../shared/protocol.js";
import { syntheticModel } from "./helpers/models.js";
import { type GpuChild, killHard, startGpuChild } from "./reliability/helpers.js";

const SECRET = "single-node-secret-0123456789abcdef";
const NODE_ID = "default";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

let dir: string;
let node: GpuChild;
let edge: EdgeServer;

async function admin(method: string, path: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${edge.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${edge.generatedAdminKey}` },
  });
  return { status: res.status, body: (await res.json()) as Json };
}

async function nodeHealth() {
  return healthSchema.parse(await (await fetch(`${node.url}/health`)).json());
}

/** The node's health once its tiers stopped changing (a graft warms its block in the background). */
async function settledHealth() {
  let last = await nodeHealth();
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const now = await nodeHealth();
    if (JSON.stringify(now.tiers) === JSON.stringify(last.tiers)) return now;
    last = now;
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-single-node-"));
  node = await startGpuChild({
    modelPath: syntheticModel("tiny-llama"),
    dataDir: join(dir, "gpu"),
    secret: SECRET,
    env: { KV_THREADS: "1" },
  });
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: node.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_GPU_NODE_ID: NODE_ID,
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  // Blocks made on the node and registered in the library, as a deposit does.
  for (let i = 0; i < 4; i++) {
    const text = `Problem:\nWhat is ${i} plus 40?\n\nAnswer: ${i + 40}\n`;
    const manifest = await node.client.deposit(text);
    const { problem } = await registerProblem(edge.db, {
      normalizedText: `what is ${i} plus 40?`,
      fingerprint: manifest.textSha256,
      template: "what is # plus #?",
      params: [String(i), "40"],
    });
    await registerBlock(edge.db, blockInput(manifest, problem.id, NODE_ID));
  }
}, 180_000);

afterAll(async () => {
  await edge?.close();
  if (node) await killHard(node);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("admin views of the single configured GPU node", () => {
  it("/admin/nodes shows the hot, warm and cold tiers the node's /health reports", async () => {
    const health = await settledHealth();
    const listed = await admin("GET", "/admin/nodes");
    expect(listed.status).toBe(200);
    // Every block is on disk (cold); some are also resident (hot) or in RAM (warm).
    expect(health.tiers.coldCount).toBe(4);
    expect(listed.body.nodes).toHaveLength(1);
    const [view] = listed.body.nodes;
    expect(view).toMatchObject({ id: NODE_ID, source: "static", live: true, status: "up" });
    expect(view.tiers).toEqual(health.tiers);
    // Bytes per tier from the manifests: cold is every block, hot one state per slot holding a block.
    const sizes = new Map((await node.client.listBlocks()).map((m) => [m.sha256, m.sizeBytes]));
    const total = (ids: string[]) => ids.reduce((n, id) => n + (sizes.get(id) ?? 0), 0);
    expect(health.tiers.bytes?.cold).toBe(total([...sizes.keys()]));
    expect(health.tiers.bytes?.warm).toBe(total(health.tiers.warm));
    expect(health.tiers.bytes?.hot).toBeGreaterThanOrEqual(total(health.tiers.hot));
    expect(view.health).toMatchObject({ status: health.status, tiers: health.tiers, queue: health.queue });
    expect(view.capacity).toMatchObject({ slots: health.slots.total, queueCapacity: health.queue.capacity });
    expect(view.modelFingerprint).toBe(health.model.sha256);

    // After a graft the block is hot: the next view follows the node, not a cached report.
    const [block] = await node.client.listBlocks();
    await node.client.graft({ blockId: block?.sha256 as string, query: "Next:", maxTokens: 1 });
    const after = await settledHealth();
    expect(after.tiers.hot).toContain(block?.sha256);
    expect((await admin("GET", "/admin/nodes")).body.nodes[0].tiers).toEqual(after.tiers);
  });

  it("the rebalancer counts the node as live and sees the library's ready blocks", async () => {
    const ran = await admin("POST", "/admin/rebalance");
    expect(ran.status).toBe(200);
    expect(ran.body.report).toMatchObject({ liveNodes: 1, blocks: 4, failed: [], unavailable: 0 });
    const status = await admin("GET", "/admin/rebalance");
    expect(status.body.rebalance.last).toMatchObject({ liveNodes: 1, blocks: 4 });
  });

  it("a node that stopped answering: the view says why its report is missing", async () => {
    await killHard(node);
    const [view] = (await admin("GET", "/admin/nodes")).body.nodes;
    expect(view.health.error).toEqual(expect.any(String));
  });
});
