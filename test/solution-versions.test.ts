/**
 * Solutions have versions: a real GPU node (generated tiny model, real sandbox) and a real edge
 * (libSQL file) on loopback. Posting a problem again with another verified program supersedes the
 * old solution (kept for audit), re-deposits the block, and the fast path, the library and transfer
 * use the new one; after DELETE /admin/blocks/:id the same solution posted again gets a new block.
 * A program that prints a constant is accepted for its own problem only (`parametric: false`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { solutions } from "../edge/db/schema.js";
import { systemClock } from "../edge/http.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { depositSolution } from "../edge/services/admin.service.js";
import { type RunningGpuNode, startGpuNode } from "../gpu-node/server/node.js";
import { createGpuClient, type GpuNodeClient } from "../shared/gpu-client.js";
import { silentLogger } from "../shared/http/logger.js";
import { syntheticModel } from "./helpers/models.js";

const SECRET = "versions-test-secret-0123456789";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

let dir: string;
let node: RunningGpuNode;
let edge: EdgeServer;
let gpu: GpuNodeClient;

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${edge.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${edge.generatedAdminKey}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

const onNode = async () => new Set((await gpu.listBlocks()).map((b) => b.sha256));

const PROBLEM = "A box holds 17 rows of 23 marbles and 5 loose marbles. How many marbles are in the box?";
/** Version 1 forgets the loose marbles: its program checks out (it prints the answer given), but the answer is wrong. */
const V1 = {
  problem: PROBLEM,
  solution: "17 rows of 23 marbles make 17 × 23 = 391 marbles.",
  program: "rows, per_row, loose = PARAMS\nprint(rows * per_row)\n",
  answer: "391",
};
const V2 = {
  problem: PROBLEM,
  solution: "17 rows of 23 marbles make 391, and 5 loose ones make 396 marbles.",
  program: "rows, per_row, loose = PARAMS\nprint(rows * per_row + loose)\n",
  answer: "396",
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-versions-"));
  node = await startGpuNode(
    {
      env: { MODEL_PATH: syntheticModel("tiny-llama"), KVGRAFT_GPU_SECRET: SECRET },
      port: 0,
      dataDir: join(dir, "gpu"),
      contextSize: 1024,
    },
    silentLogger,
  );
  gpu = createGpuClient({ baseUrl: node.url, secret: SECRET });
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: node.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_GPU_TIMEOUT_MS: "60000",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
}, 120_000);

afterAll(async () => {
  await edge?.close();
  await node?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("solution versions", () => {
  let v1: Json;
  let v2: Json;

  it("a new verified program supersedes the old one; the old stays for audit and its block goes", async () => {
    const first = await api("POST", "/admin/solutions", V1);
    expect(first.status).toBe(201);
    v1 = first.body;
    expect(v1).toMatchObject({
      created: true,
      superseded: null,
      solution: { version: 1, supersededAt: null, supersededBy: null, parametric: true },
    });
    expect((await api("POST", "/v1/solve", { problem: PROBLEM })).body).toMatchObject({
      source: "library",
      answer: "391",
    });

    const second = await api("POST", "/admin/solutions", V2);
    expect(second.status).toBe(201);
    v2 = second.body;
    expect(v2).toMatchObject({
      created: true,
      problem: { id: v1.problem.id },
      solution: { version: 2, answer: "396", supersededAt: null },
      block: { state: "ready" },
      superseded: { id: v1.solution.id, version: 1, supersededBy: v2.solution.id },
    });
    expect(v2.superseded.supersededAt).toEqual(expect.any(String));
    expect(v2.block.sha256).not.toBe(v1.block.sha256);
    const held = await onNode();
    expect(held.has(v2.block.sha256)).toBe(true);
    expect(held.has(v1.block.sha256)).toBe(false);

    // Audit: both versions are in the database, the old one marked.
    const rows = await edge.db.select().from(solutions).where(eq(solutions.problemId, v1.problem.id));
    expect(rows.map((r) => [r.version, r.answer, r.supersededBy])).toEqual([
      [1, "391", v2.solution.id],
      [2, "396", null],
    ]);
    const detail = (await api("GET", `/v1/library/${v1.problem.id}`)).body;
    expect(detail.blocks.map((b: Json) => [b.sha256, b.state])).toEqual([
      [v1.block.sha256, "superseded"],
      [v2.block.sha256, "ready"],
    ]);
  });

  it("the fast path serves the new answer from the new block; transfer runs the new program", async () => {
    const fast = await api("POST", "/v1/solve", { problem: PROBLEM });
    expect(fast.body).toMatchObject({
      source: "library",
      answer: "396",
      verified: true,
      verification: { solutionId: v2.solution.id },
      route: { blockId: v2.block.sha256 },
    });
    const moved = await api("POST", "/v1/solve", {
      problem: "A box holds 17 rows of 23 marbles and 6 loose marbles. How many marbles are in the box?",
    });
    expect(moved.body).toMatchObject({ source: "transfer", answer: "397", verified: true });
  });

  it("the same solution again changes nothing; the starter library and the flywheel never replace", async () => {
    const again = await api("POST", "/admin/solutions", V2);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      created: false,
      superseded: null,
      solution: { id: v2.solution.id },
      block: { sha256: v2.block.sha256, state: "ready" },
    });
    const kept = await depositSolution(
      { db: edge.db, gpu: edge.gpu, config: edge.config, clock: systemClock },
      V1,
    );
    expect(kept).toMatchObject({ created: false, solution: { id: v2.solution.id }, superseded: null });
    expect((await api("POST", "/v1/solve", { problem: PROBLEM })).body.answer).toBe("396");
  });

  it("after DELETE /admin/blocks/:id, posting the solution again deposits a new block", async () => {
    const deleted = await api("DELETE", `/admin/blocks/${v2.block.sha256}`);
    expect(deleted.body.block.state).toBe("quarantined");
    expect((await onNode()).has(v2.block.sha256)).toBe(false);
    const reposted = await api("POST", "/admin/solutions", V2);
    expect(reposted.status).toBe(200);
    expect(reposted.body).toMatchObject({
      created: false,
      solution: { id: v2.solution.id, version: 2 },
      block: { state: "ready" },
    });
    expect(reposted.body.block).not.toBeNull();
    expect((await onNode()).has(reposted.body.block.sha256)).toBe(true);
    const fast = await api("POST", "/v1/solve", { problem: PROBLEM });
    expect(fast.body).toMatchObject({ answer: "396", route: { blockId: reposted.body.block.sha256 } });
  });

  it("a program that prints a constant answers its own problem only: parametric false, never transferred", async () => {
    const constant = await api("POST", "/admin/solutions", {
      problem: "A crate holds 12 rows of 30 jars. How many jars are in the crate?",
      solution: "12 rows of 30 jars make 360 jars.",
      program: "print(360)\n",
      answer: "360",
    });
    expect(constant.status).toBe(201);
    expect(constant.body.solution).toMatchObject({ parametric: false, verified: true });
    expect(constant.body.solution.verification.paramProfile.params.map((p: Json) => p.role)).toEqual([
      "ignored",
      "ignored",
    ]);
    const other = await api("POST", "/v1/solve", {
      problem: "A crate holds 12 rows of 31 jars. How many jars are in the crate?",
      maxTokens: 2,
    });
    expect(other.body).toMatchObject({
      source: "graft",
      verified: false,
      transferRefused: null,
      route: { reason: "template_graft", blockId: constant.body.block.sha256 },
    });
  });
});
