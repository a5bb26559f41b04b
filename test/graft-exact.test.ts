import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine } from "../gpu-node/engine/engine.js";
import { assertSameOrigin, engineOrigin, loadSequenceState } from "../gpu-node/engine/state.js";
import { randomTokens, verifyGraft } from "../gpu-node/verify.js";
import { Xoshiro128 } from "../shared/random.js";
import { syntheticModel } from "./helpers/models.js";

async function greedy(seq: LlamaContextSequence, first: Token, n: number): Promise<Token[]> {
  const out: Token[] = [];
  for await (const t of seq.evaluate([first], { temperature: 0 })) {
    out.push(t);
    if (out.length >= n) break;
  }
  return out;
}

describe.each(["tiny-llama", "tiny-qwen3", "tiny-gemma3"] as const)("graft on %s", (preset) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open({ modelPath: syntheticModel(preset), slots: 2, contextSize: 1024 });
  });
  afterAll(() => engine.dispose());

  it("restores byte-exactly: equal probability hashes, KL exactly 0, same argmax", async () => {
    const report = await verifyGraft(engine, { trials: 12, tokens: 400, seed: preset });
    expect(report.shaEqual).toBe(12);
    expect(report.klMedian).toBe(0);
    expect(report.klP99).toBe(0);
    expect(report.argmaxAgreement).toBe(1);
    expect(report.stateBytes).toBeGreaterThan(0);
  });

  it("continues greedily after a graft exactly as after a fresh prefill", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kvgraft-greedy-"));
    const tokens = randomTokens(new Xoshiro128(`greedy-${preset}`), 200, engine.vocabSize);
    const [a, b] = [engine.slot(0), engine.slot(1)];
    await a.clearHistory();
    await a.evaluateWithoutGeneratingNewTokens(tokens.slice(0, -1));
    await a.saveStateToFile(join(dir, "s"));
    const fresh = await greedy(a, tokens.at(-1) as Token, 16);
    await loadSequenceState(b, join(dir, "s"));
    const grafted = await greedy(b, tokens.at(-1) as Token, 16);
    expect(grafted).toEqual(fresh);
    expect(fresh).toHaveLength(16);
  });

  it("refuses a state from another model or another context configuration before loading", async () => {
    const origin = engineOrigin(engine);
    expect(() => assertSameOrigin(engine, { ...origin, modelSha256: "0".repeat(64) })).toThrow(
      /different model/,
    );
    const q8 = await Engine.open({
      modelPath: syntheticModel(preset),
      slots: 1,
      contextSize: 256,
      kvType: "q8_0",
    });
    try {
      expect(q8.engineFingerprint.id).not.toBe(engine.engineFingerprint.id);
      expect(() => assertSameOrigin(q8, origin)).toThrow(/different engine or context configuration/);
      // The opt-in is by type, like node-llama-cpp's acceptRisk; a model mismatch is never accepted.
      expect(() => assertSameOrigin(q8, origin, { acceptEngineMismatch: true })).not.toThrow();
    } finally {
      await q8.dispose();
    }
  });
});

describe("sliding-window model without the full cache", () => {
  it("still restores exactly from a file, and is marked as not truncatable so the hot tier is never used", async () => {
    const engine = await Engine.open({
      modelPath: syntheticModel("tiny-gemma3"),
      slots: 2,
      contextSize: 512,
      swaFullCache: false,
    });
    try {
      expect(engine.slidingWindow).toBe(64);
      expect(engine.canTruncate).toBe(false);
      const report = await verifyGraft(engine, { trials: 4, tokens: 200 });
      expect(report.shaEqual).toBe(4);
    } finally {
      await engine.dispose();
    }
    const full = await Engine.open({ modelPath: syntheticModel("tiny-gemma3"), slots: 1, contextSize: 256 });
    expect(full.canTruncate).toBe(true);
    await full.dispose();
  });
});
