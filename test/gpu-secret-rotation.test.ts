/**
 * Rotating the GPU secret without downtime (docs/deploy.md): a GPU node accepts signatures made
 * with its current secret or the one it replaces (KVGRAFT_GPU_SECRET_PREVIOUS) and signs its
 * heartbeats with the previous one while it has one; an edge accepts heartbeats signed with either
 * of its two. After the rotation (previous removed) the old secret is refused. Real GPU nodes
 * (tiny random-weight model) and real edges on loopback.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { type RunningGpuNode, startGpuNode } from "../gpu-node/server/node.js";
import { createGpuClient, GpuError } from "../shared/gpu-client.js";
import { heartbeatFrom, sendHeartbeat } from "../shared/heartbeat.js";
import { silentLogger } from "../shared/http/logger.js";
import { healthSchema } from "../shared/protocol.js";
import { syntheticModel } from "./helpers/models.js";

const OLD = "rotation-old-secret-0123456789";
const NEW = "rotation-new-secret-9876543210";

let dir: string;
/** Mid-rotation: the new secret, the old one still accepted. */
let rotating: RunningGpuNode;
/** After the rotation: the new secret only. */
let rotated: RunningGpuNode;
const edges: Record<"old" | "rotating" | "rotated", EdgeServer> = {} as never;

function startEdge(name: string, env: Record<string, string>): Promise<EdgeServer> {
  return startEdgeServer({
    env: { LIBSQL_URL: `file:${join(dir, `${name}.db`)}`, ...env },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-rotation-"));
  // Step 1 of the rotation: the edge still signs with the old secret, the node has the new one.
  edges.old = await startEdge("old", { KVGRAFT_GPU_SECRET: OLD });
  const model = syntheticModel("tiny-llama");
  rotating = await startGpuNode(
    {
      env: {
        MODEL_PATH: model,
        KVGRAFT_GPU_SECRET: NEW,
        KVGRAFT_GPU_SECRET_PREVIOUS: OLD,
        KVGRAFT_EDGE_URL: edges.old.url,
        KVGRAFT_NODE_ID: "rotating",
      },
      port: 0,
      dataDir: join(dir, "rotating"),
    },
    silentLogger,
  );
  rotated = await startGpuNode(
    { env: { MODEL_PATH: model, KVGRAFT_GPU_SECRET: NEW }, port: 0, dataDir: join(dir, "rotated") },
    silentLogger,
  );
  edges.rotating = await startEdge("rotating", { KVGRAFT_GPU_SECRET: NEW, KVGRAFT_GPU_SECRET_PREVIOUS: OLD });
  edges.rotated = await startEdge("rotated", { KVGRAFT_GPU_SECRET: NEW });
}, 120_000);

afterAll(async () => {
  for (const edge of Object.values(edges)) await edge.close();
  await rotating?.stop();
  await rotated?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A signed call to the node with `secret`: resolves to the status (200, or the refusal's). */
async function signedCall(node: RunningGpuNode, secret: string): Promise<number | string> {
  try {
    await createGpuClient({ baseUrl: node.url, secret }).listBlocks();
    return 200;
  } catch (err) {
    if (err instanceof GpuError) return `${err.status} ${err.code}`;
    throw err;
  }
}

async function heartbeat(edge: EdgeServer, secret: string): Promise<string> {
  const health = healthSchema.parse(await (await fetch(`${rotating.url}/health`)).json());
  return sendHeartbeat({ edgeUrl: edge.url, secret }, heartbeatFrom("probe-node", rotating.url, health)).then(
    (r) => r.node.status,
    (err: Error) => err.message,
  );
}

describe("GPU secret rotation", () => {
  it("a node mid-rotation accepts the current and the previous secret, and nothing else", async () => {
    expect(await signedCall(rotating, NEW)).toBe(200);
    expect(await signedCall(rotating, OLD)).toBe(200);
    expect(await signedCall(rotating, "some-other-secret-0123456789")).toBe("401 signature_invalid");
  });

  it("once the previous secret is removed, the old one is refused", async () => {
    expect(await signedCall(rotated, NEW)).toBe(200);
    expect(await signedCall(rotated, OLD)).toBe("401 signature_invalid");
  });

  it("a node mid-rotation heartbeats with the previous secret, which an edge not yet rotated accepts", async () => {
    const t0 = Date.now();
    for (;;) {
      const res = await fetch(`${edges.old.url}/admin/nodes`, {
        headers: { authorization: `Bearer ${edges.old.generatedAdminKey}` },
      });
      const { nodes } = (await res.json()) as { nodes: { id: string; status: string }[] };
      if (nodes.some((n) => n.id === "rotating" && n.status === "up")) break;
      if (Date.now() - t0 > 10_000) throw new Error(`the node never registered: ${JSON.stringify(nodes)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  it("an edge mid-rotation accepts heartbeats signed with either secret; after it, only the new one", async () => {
    expect(await heartbeat(edges.rotating, OLD)).toBe("up");
    expect(await heartbeat(edges.rotating, NEW)).toBe("up");
    expect(await heartbeat(edges.rotated, NEW)).toBe("up");
    expect(await heartbeat(edges.rotated, OLD)).toMatch(/HTTP 401 .*signature_invalid/);
  });
});
