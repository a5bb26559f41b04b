/**
 * The solve pipeline (gpu-node/solve) through the real GPU node on loopback: a generated tiny
 * random-weight model, the real sandbox, the signed client. The model's text is gibberish, so the
 * tests assert what holds regardless: the grammar-constrained final part parses, the budget
 * holds, every program ran in the sandbox, the vote is consistent with the samples, and a fixed
 * seed reproduces the same output.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGpuApp } from "../gpu-node/server/app.js";
import { type RunningGpuNode, startGpuNode } from "../gpu-node/server/node.js";
import { planSolve } from "../gpu-node/solve/solver.js";
import { answersEqual } from "../shared/answers.js";
import { parseFinal } from "../shared/final-part.js";
import { createGpuClient, type GpuError, type GpuNodeClient } from "../shared/gpu-client.js";
import { silentLogger } from "../shared/http/logger.js";
import { solveResultSchema } from "../shared/solve-protocol.js";
import { tally } from "../shared/vote.js";
import { syntheticModel } from "./helpers/models.js";

const SECRET = "solve-test-secret-0123456789";
const PROBLEM = "A box holds 17 rows of 23 marbles. How many marbles are in the box?";

let dataDir: string;
let node: RunningGpuNode;
let client: GpuNodeClient;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "kvgraft-solve-"));
  node = await startGpuNode(
    {
      env: { MODEL_PATH: syntheticModel("tiny-llama"), KVGRAFT_GPU_SECRET: SECRET },
      port: 0,
      dataDir,
      contextSize: 1024,
    },
    silentLogger,
  );
  client = createGpuClient({ baseUrl: node.url, secret: SECRET });
});

afterAll(async () => {
  await node?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe("planning, parsing and voting", () => {
  it("splits the budget over the samples and keeps a final part only where it fits", () => {
    expect(planSolve(300, 3)).toMatchObject({ samples: 3, reasoningTokens: 50, finalTokens: 50 });
    expect(planSolve(100, 8).samples).toBe(2);
    expect(planSolve(3, 4)).toMatchObject({ samples: 1, reasoningTokens: 3, finalTokens: 0 });
    for (const [budget, k] of [
      [1, 1],
      [47, 2],
      [1000, 7],
      [4096, 8],
    ] as const) {
      const p = planSolve(budget, k);
      expect(p.samples * (p.reasoningTokens + p.finalTokens)).toBeLessThanOrEqual(budget);
    }
  });

  it("closes a final part the budget cut off, whatever the cut", () => {
    const whole = '{ "answer": "391", "program": "print(17 * 23)\\n\\u00e9" }';
    expect(parseFinal(whole)).toEqual({ answer: "391", program: "print(17 * 23)\n\u00e9", truncated: false });
    for (let cut = 0; cut < whole.length; cut++) {
      const parsed = parseFinal(whole.slice(0, cut));
      expect(parsed.truncated).toBe(true);
      expect("391".startsWith(parsed.answer)).toBe(true);
      expect("print(17 * 23)\n\u00e9".startsWith(parsed.program)).toBe(true);
    }
  });

  it("votes over stated answers and program outputs", () => {
    const agreed = tally(
      [
        { stated: "391", program: "391.0" },
        { stated: "391", program: "391" },
        { stated: "390", program: null },
      ],
      0.6,
    );
    expect(agreed).toMatchObject({ answer: "391", programsAgree: true, unsure: false });
    expect(agreed.confidence).toBeCloseTo(4 / 6);
    const split = tally(
      [
        { stated: "391", program: "391" },
        { stated: "391", program: "392" },
      ],
      0.5,
    );
    expect(split).toMatchObject({ answer: "391", programsAgree: false, unsure: true });
    expect(tally([{ stated: null, program: null }], 0.5)).toMatchObject({
      answer: null,
      confidence: 0,
      unsure: true,
    });
  });
});

describe("POST /v1/solve on a random-weight model", () => {
  it("samples, parses every final part, runs every program and votes", async () => {
    const r = await client.solve({ problem: PROBLEM, samples: 3, maxTokens: 240, seed: 11 });
    expect(solveResultSchema.parse(r)).toEqual(r);
    expect(r.samples).toHaveLength(3);
    expect(r.samples.map((s) => s.seed)).toEqual([11, 12, 13]);
    expect(r.tokensOut).toBeLessThanOrEqual(240);
    expect(r.tokensOut).toBe(r.samples.reduce((n, s) => n + s.tokensOut, 0));
    expect(r.tokensIn).toBeGreaterThan(0);
    for (const s of r.samples) {
      expect(typeof s.answer).toBe("string");
      expect(typeof s.program).toBe("string");
      // The final part is JSON as generated, or after closing when the budget cut it.
      if (!s.truncated) expect(JSON.parse(s.final)).toMatchObject({ answer: s.answer, program: s.program });
      if ((s.program ?? "").trim() !== "") {
        expect(s.run).not.toBeNull();
        expect(["ok", "wrong_answer", "timeout", "memory", "output_limit", "error"]).toContain(
          s.run?.verdict,
        );
      } else expect(s.run).toBeNull();
    }
    // The vote is the samples' vote.
    const votes = r.samples.flatMap((s) => [s.answer, s.run?.verdict === "ok" ? s.run.answer : null]);
    const cast = votes.filter((v): v is string => v !== null && v.trim() !== "");
    const winner = r.answer === null ? 0 : cast.filter((v) => answersEqual(v, r.answer as string)).length;
    expect(r.confidence).toBeCloseTo(winner / 6);
    expect(r.unsure).toBe(r.answer === null || r.confidence < 0.6 || !r.programsAgree);
    expect(r.gpuMs).toBeGreaterThan(0);
    expect(r.isolation).not.toBe("");
    // No NVIDIA GPU on the CI machines: no energy figure rather than a made-up one.
    if (r.energy) expect(r.energy.intervalMs).toBe(100);
    // Distinct seeds give distinct samples; the same seed gives the same output.
    expect(new Set(r.samples.map((s) => s.final + s.reasoning)).size).toBe(3);
    const again = await client.solve({ problem: PROBLEM, samples: 1, maxTokens: 80, seed: 11 });
    const twice = await client.solve({ problem: PROBLEM, samples: 1, maxTokens: 80, seed: 11 });
    expect(twice.outputSha256).toBe(again.outputSha256);
  });

  it("keeps a budget too small for a final part: one sample that only reasons", async () => {
    const r = await client.solve({ problem: PROBLEM, samples: 4, maxTokens: 3 });
    expect(r.samples).toHaveLength(1);
    expect(r.samples[0]).toMatchObject({ answer: null, program: null, run: null });
    expect(r.tokensOut).toBeGreaterThan(0);
    expect(r.tokensOut).toBeLessThanOrEqual(3);
    expect(r).toMatchObject({ answer: null, confidence: 0, unsure: true });
  });

  it("refuses bad requests with machine codes", async () => {
    const refused = async (body: object) =>
      client.solve(body as never).then(
        () => null,
        (e: GpuError) => [e.status, e.code],
      );
    expect(await refused({ problem: PROBLEM, temperature: 0 })).toEqual([400, "invalid_request"]);
    expect(await refused({ problem: "" })).toEqual([400, "invalid_request"]);
    expect(await refused({ problem: PROBLEM, maxTokens: 4000, samples: 1 })).toEqual([
      400,
      "context_overflow",
    ]);
    // A node without a sandbox cannot check programs, so it does not solve.
    const bare = createGpuApp({
      blocks: node.blocks,
      secret: SECRET,
      fingerprints: { model: node.engine.modelFingerprint, engine: node.engine.engineFingerprint },
      dataDir,
    });
    const viaBare = createGpuClient({
      baseUrl: "http://bare.invalid",
      secret: SECRET,
      fetch: (input, init) => Promise.resolve(bare.app.fetch(new Request(input, init))),
    });
    await expect(viaBare.solve({ problem: PROBLEM })).rejects.toMatchObject({
      status: 501,
      code: "sandbox_unavailable",
      retryAfterS: undefined,
    });
  });
});
