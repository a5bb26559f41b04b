/**
 * Exact evaluations run alone in their batch: a probe evaluated while another slot of the same
 * context evaluates tokens hashes the same as the probe alone (without exact-batching.ts the two
 * share one llama.cpp batch and the hash differs: tiny-llama, CPU), and a deposit made while
 * another slot generates still verifies.
 */
import type { BatchItem, EvaluationPriority, Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine } from "../gpu-node/engine/engine.js";
import { EXACT_PRIORITY, exactFirstStrategy } from "../gpu-node/engine/exact-batching.js";
import { evaluateProbe } from "../gpu-node/engine/probe.js";
import { syntheticModel } from "./helpers/models.js";

const tokensOf = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => (300 + ((i * 7919 + seed * 104729) % 700)) as Token);

describe("exact evaluations and batching", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 2, contextSize: 4096 });
  });
  afterAll(async () => {
    await engine?.dispose();
  });

  it("a probe beside another slot's evaluation hashes as the probe alone", async () => {
    const [a, b] = [engine.slot(0), engine.slot(1)];
    await a.evaluateWithoutGeneratingNewTokens(tokensOf(2000, 1));
    await b.evaluateWithoutGeneratingNewTokens(tokensOf(3500, 2));
    const probe = 333 as Token;
    const alone = await evaluateProbe(a, probe, engine.vocabSize);
    for (let i = 0; i < 3; i++) {
      await a.eraseContextTokenRanges([{ start: 2000, end: a.nextTokenIndex }]);
      const [beside] = await Promise.all([
        evaluateProbe(a, probe, engine.vocabSize),
        b.evaluateWithoutGeneratingNewTokens(tokensOf(3, 3 + i)),
      ]);
      expect(beside.sha256).toBe(alone.sha256);
    }
    await a.clearHistory();
    await b.clearHistory();
  });

  it("puts an exact evaluation alone in its batch and shares the batch among the others", () => {
    const item = (n: number, priority: EvaluationPriority): BatchItem => ({
      tokens: tokensOf(n, n),
      logits: [],
      evaluationPriority: priority,
    });
    const [big, small, exact] = [item(600, 5), item(10, 5), item(700, EXACT_PRIORITY)];
    expect(exactFirstStrategy({ items: [big, exact, small], size: 512 })).toEqual([
      { item: exact, processAmount: 512 },
    ]);
    const shared = exactFirstStrategy({ items: [big, small], size: 512 });
    expect(shared).toEqual([
      { item: big, processAmount: 502 },
      { item: small, processAmount: 10 },
    ]);
  });
});
