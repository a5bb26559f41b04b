/**
 * The flywheel end to end: a real GPU node (generated tiny random-weight model, real sandbox) and
 * a real edge (libSQL file) on loopback. An unsure model answer is queued; the worker solves it
 * again with a bigger budget, judges the candidates, and deposits or rejects. A random model never
 * agrees with itself, so acceptance goes through a reference answer: one of its own stated answers
 * (chosen after the fact from the recorded candidates, or beforehand from the same seeded sample).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGpuPool } from "../edge/cluster/gpu-pool.js";
import { systemClock } from "../edge/http.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { type FlywheelBudget, runFlywheelOnce } from "../edge/services/flywheel.service.js";
import { type Candidate, judge } from "../edge/services/flywheel-judge.js";
import { startFlywheelWorker } from "../edge/services/flywheel-worker.js";
import { type RunningGpuNode, startGpuNode } from "../gpu-node/server/node.js";
import { createGpuClient, type GpuNodeClient } from "../shared/gpu-client.js";
import { createLogger, silentLogger } from "../shared/http/logger.js";
import { runCli } from "./helpers/cli.js";
import { syntheticModel } from "./helpers/models.js";

const SECRET = "flywheel-test-secret-0123456789";
const BUDGET: FlywheelBudget = {
  baseline: { samples: 1, maxTokens: 60 },
  heavy: { samples: 2, maxTokens: 120 },
  temperature: 0.8,
  seed: 1000,
  minConfidence: 0.6,
};

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

let dir: string;
let node: RunningGpuNode;
let edge: EdgeServer;
let gpu: GpuNodeClient;
let key: string;
let deps: Parameters<typeof runFlywheelOnce>[0];

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${edge.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

const blockCount = async () => (await gpu.listBlocks()).length;

/** A stated answer that a constant program can print back (one line, not blank). */
const usable = (c: Candidate) => c.stated !== null && c.stated.trim() !== "" && !/[\r\n]/.test(c.stated);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-flywheel-"));
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
  const env = {
    LIBSQL_URL: `file:${join(dir, "edge.db")}`,
    KVGRAFT_GPU_URL: node.url,
    KVGRAFT_GPU_SECRET: SECRET,
    KVGRAFT_GPU_TIMEOUT_MS: "60000",
  };
  edge = await startEdgeServer({ env, port: 0, host: "127.0.0.1", logger: silentLogger });
  key = edge.generatedAdminKey as string;
  deps = { db: edge.db, gpu: edge.gpu, config: edge.config, clock: systemClock };
});

afterAll(async () => {
  await edge?.close();
  await node?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("judging candidates", () => {
  const c = (
    seed: number,
    stated: string | null,
    program: string | null,
    printed: string | null,
  ): Candidate => ({
    seed,
    stated,
    program,
    printed,
    verdict: printed === null ? "error" : "ok",
    reasoning: `reasoning ${seed}`,
  });

  it("accepts two independent programs that agree with the majority stated answer", () => {
    const verdict = judge(
      [
        c(1, "391", "print(PARAMS[0] * PARAMS[1])", "391"),
        c(2, "391", "a, b = PARAMS\nprint(a * b)", "391.0"),
        c(3, "390", "print(390)", "390"),
      ],
      null,
    );
    expect(verdict).toEqual({
      accepted: {
        answer: "391",
        program: "print(PARAMS[0] * PARAMS[1])",
        solution: "reasoning 1",
        basis: "agreement",
        seeds: [1, 2],
      },
    });
  });

  it("rejects one program twice, programs against the stated majority, and a lone program", () => {
    const same = "print(PARAMS[0] * PARAMS[1])";
    expect(judge([c(1, "391", same, "391"), c(2, "391", ` ${same}\n`, "391")], null)).toEqual({
      reason: "no_agreement",
    });
    expect(
      judge(
        [c(1, "390", "print(391)", "391"), c(2, "390", "print(17*23)", "391"), c(3, "390", null, null)],
        null,
      ),
    ).toEqual({ reason: "no_agreement" });
    expect(judge([c(1, "391", same, "391"), c(2, "391", null, null)], null)).toEqual({
      reason: "no_agreement",
    });
    expect(judge([c(1, null, null, null)], null)).toEqual({ reason: "no_stated_answer" });
  });

  it("with a reference answer, prefers a program that prints it over a stated answer", () => {
    const candidates = [c(1, "391", null, null), c(2, "17", "print(17 * 23)", "391")];
    expect(judge(candidates, "391")).toMatchObject({
      accepted: { basis: "reference_program", program: "print(17 * 23)", seeds: [2] },
    });
    expect(judge([c(1, "391", "oops", null)], "391")).toMatchObject({
      accepted: { basis: "reference_stated", program: 'print("391")\n', seeds: [1] },
    });
    expect(judge(candidates, "42")).toEqual({ reason: "no_candidate_matches_reference" });
  });
});

describe("flywheel", () => {
  let rejectedId: string;

  it("queues an unsure model answer, then rejects what it cannot verify without making a block", async () => {
    const problem = "A farmer has 41 sheep and buys 17 more. How many sheep does the farmer have?";
    const solved = await api("POST", "/v1/solve", { problem, maxTokens: 60 });
    expect(solved.status).toBe(200);
    expect(solved.body).toMatchObject({ source: "model", verified: false, queued: true });
    expect(solved.body.confidence).toBeLessThan(0.6);
    const listed = await api("GET", "/admin/flywheel");
    expect(listed.body.progress).toMatchObject({ queued: 1, done: 0, tokensOut: 0 });
    expect(listed.body.items[0]).toMatchObject({ problem, status: "queued" });

    const before = await blockCount();
    const item = await runFlywheelOnce(deps, BUDGET);
    expect(item).toMatchObject({ status: "rejected" });
    rejectedId = item?.id as string;
    const result = item?.result as Json;
    expect(["no_agreement", "no_stated_answer"]).toContain(result.reason);
    expect(result.candidates).toHaveLength(2);
    const cost = item?.cost as Json;
    expect(cost.requests).toBe(3);
    expect(cost.tokensOut).toBeGreaterThan(0);
    expect(cost.tokensOut).toBeLessThanOrEqual(BUDGET.baseline.maxTokens + BUDGET.heavy.maxTokens);
    expect(await blockCount()).toBe(before);

    const progress = (await api("GET", "/admin/flywheel")).body.progress;
    expect(progress).toMatchObject({
      queued: 0,
      running: 0,
      rejected: 1,
      done: 1,
      tokensOut: cost.tokensOut,
    });
    const shown = await api("GET", `/admin/flywheel/${rejectedId}`);
    expect(shown.body.item.cost).toEqual(cost);
    expect(shown.body.item.result.candidates).toHaveLength(2);
    // The list counts candidates instead of carrying them.
    const [brief] = (await api("GET", "/admin/flywheel?status=rejected")).body.items;
    expect(brief).toMatchObject({ id: rejectedId, result: { candidateCount: 2 } });
    expect(brief.result.candidates).toBeUndefined();
  });

  it("an admin's reference answer that no candidate matches is refused; still no block", async () => {
    const before = await blockCount();
    const r = await api("POST", `/admin/flywheel/${rejectedId}/accept`, { referenceAnswer: "58" });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("no_matching_candidate");
    expect(await blockCount()).toBe(before);
    expect((await api("GET", `/admin/flywheel/${rejectedId}`)).body.item.status).toBe("rejected");
  });

  it("accepts a candidate matching the admin's reference answer and deposits one block", async () => {
    const item = (await api("GET", `/admin/flywheel/${rejectedId}`)).body.item;
    const reference = (item.result.candidates as Candidate[]).find(usable)?.stated?.trim();
    if (reference === undefined) throw new Error("no candidate stated a one-line answer");
    const before = await blockCount();
    const r = await api("POST", `/admin/flywheel/${rejectedId}/accept`, { referenceAnswer: reference });
    expect(r.status).toBe(200);
    expect(r.body.item).toMatchObject({
      status: "accepted",
      result: {
        acceptedBy: "admin",
        accepted: { basis: "reference_stated", answer: reference },
        created: true,
      },
    });
    expect(await blockCount()).toBe(before + 1);
    expect(await gpu.getBlock(r.body.item.result.blockSha256)).toBeTruthy();
    // Now the library answers the problem itself.
    const again = await api("POST", "/v1/solve", { problem: item.problem });
    expect(again.body).toMatchObject({ source: "library", verified: true, answer: reference, queued: false });
    const twice = await api("POST", `/admin/flywheel/${rejectedId}/accept`, { referenceAnswer: reference });
    expect(twice.status).toBe(409);
  });

  it("the worker accepts by itself when a candidate matches a reference given at enqueue", async () => {
    const problem = "A shelf holds 6 rows of 9 jars. How many jars are on the shelf?";
    // The worker's first heavy sample, reproduced: same prompt, budget, temperature and seed.
    const first = await gpu.solve({
      problem,
      samples: 1,
      maxTokens: BUDGET.heavy.maxTokens / BUDGET.heavy.samples,
      temperature: BUDGET.temperature,
      seed: BUDGET.seed,
      minConfidence: BUDGET.minConfidence,
    });
    const stated = first.samples[0]?.answer ?? "";
    expect(stated.trim()).not.toBe("");
    const queued = await api("POST", "/admin/flywheel", { problem, referenceAnswer: stated.trim() });
    expect(queued.status).toBe(201);
    const before = await blockCount();
    // One log line per step; when judging starts, the admin route is asked where the worker is
    // (the deposit that follows runs the sandbox, so the item is still running when it answers).
    const steps: Json[] = [];
    let seen: Promise<{ status: number; body: Json }> | undefined;
    // The worker's log lines, read back as it writes them.
    const logger = createLogger({
      write: (line) => {
        const {
          message,
          time: _time,
          level: _level,
          ...fields
        } = JSON.parse(line) as Record<string, unknown>;
        if (message !== "flywheel step") return;
        steps.push(fields);
        if (fields.step === "judging") seen = api("GET", "/admin/flywheel");
      },
    });
    const worker = startFlywheelWorker(deps, { budget: BUDGET, idleMs: 50, logger });
    const until = Date.now() + 60_000;
    while (worker.processed === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    await worker.stop();
    const item = (await api("GET", `/admin/flywheel/${queued.body.item.id}`)).body.item;
    expect(item).toMatchObject({ status: "accepted", result: { accepted: { basis: "reference_stated" } } });
    expect(await blockCount()).toBe(before + 1);

    const id = queued.body.item.id;
    expect(steps.every((f) => f.itemId === id)).toBe(true);
    expect(
      steps.map((f) => (f.sample === undefined ? f.step : `${f.step} ${f.sample}/${f.samples}`)),
    ).toEqual([
      "library_check",
      "baseline 0/1",
      "baseline 1/1",
      "heavy 0/2",
      "heavy 1/2",
      "heavy 2/2",
      "judging",
      "depositing",
      "done",
    ]);
    expect(steps.at(-1)).toMatchObject({ status: "accepted", requests: 3 });
    const during = await seen;
    expect(during?.body.running).toEqual([
      expect.objectContaining({ id, progress: expect.objectContaining({ step: expect.any(String) }) }),
    ]);
    expect(["judging", "depositing"]).toContain(during?.body.running[0].progress.step);
    // Finished: nothing is running, and the outcome replaced the progress record.
    const after = (await api("GET", "/admin/flywheel")).body;
    expect(after).toMatchObject({ enabled: true, running: [] });
    expect(item.result.progress).toBeUndefined();
  });

  it("does not deposit what the model already answers confidently", async () => {
    const problem = "A crate holds 12 boxes of 30 pens. How many pens are in the crate?";
    const queued = await api("POST", "/admin/flywheel", { problem });
    const before = await blockCount();
    // With no bar to clear, the baseline's vote is confident.
    const item = await runFlywheelOnce(deps, { ...BUDGET, minConfidence: 0 });
    expect(item).toMatchObject({
      id: queued.body.item.id,
      status: "rejected",
      result: { reason: "model_confident" },
    });
    expect(item?.cost).toMatchObject({ requests: BUDGET.baseline.samples });
    expect(await blockCount()).toBe(before);
  });

  it("an admin rejects a queued item: nothing is solved or deposited", async () => {
    const queued = await api("POST", "/admin/flywheel", { problem: "What is 7 times 8?" });
    const rejected = await api("POST", `/admin/flywheel/${queued.body.item.id}/reject`, { note: "trivial" });
    expect(rejected.body.item).toMatchObject({ status: "rejected", result: { reason: "admin_rejected" } });
    expect(await runFlywheelOnce(deps, BUDGET)).toBeNull();
    const unknown = await api("POST", "/admin/flywheel/fly_nope/reject", {});
    expect(unknown.status).toBe(404);
    const bad = await api("POST", "/admin/flywheel", { problem: "" });
    expect(bad.status).toBe(400);
  });

  it("puts an item back when the GPU node cannot be reached, and gives up after three tries", async () => {
    const queued = await api("POST", "/admin/flywheel", {
      problem: "A bag holds 5 red and 8 blue beads. How many beads?",
    });
    const down = {
      ...deps,
      // A pool of one node that nothing listens for.
      gpu: createGpuPool({
        ...edge.config.pool,
        db: edge.db,
        secret: SECRET,
        staticNode: { id: "gpu-down", url: "http://127.0.0.1:9" },
        timeoutMs: 5_000,
        healthTimeoutMs: 1_000,
      }),
    };
    for (const attempt of [1, 2]) {
      await expect(runFlywheelOnce(down, BUDGET)).rejects.toMatchObject({ code: "gpu_unavailable" });
      const item = (await api("GET", `/admin/flywheel/${queued.body.item.id}`)).body.item;
      expect(item).toMatchObject({ status: "queued", attempts: attempt });
    }
    expect(await runFlywheelOnce(down, BUDGET)).toMatchObject({
      status: "rejected",
      attempts: 3,
      result: { reason: "gpu_failed", error: "gpu_unavailable" },
    });
  });

  it("kvgraft flywheel --once --json works on the edge's database", () => {
    const r = runCli(
      ["flywheel", "--once", "--json", "--edge-db", `file:${join(dir, "edge.db")}`, "--gpu-url", node.url],
      {
        KVGRAFT_GPU_SECRET: SECRET,
      },
    );
    expect(r.status).toBe(0);
    expect(r.json).toMatchObject({ item: null, progress: { queued: 0, accepted: 2 } });
  });
});
