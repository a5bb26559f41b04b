/**
 * kvgraft's engine build decodes greedily in one native call a token (gpu-node/engine/
 * greedy-step.ts, `greedyStep` in native/addon/KvgraftState.cpp). It must give node-llama-cpp's
 * tokens, leave the sequence as node-llama-cpp's evaluation leaves it (the same cells: a probe
 * after either path hashes the same), split long input into the context's batches, and undo a
 * failed step. The batch loop takes it for a step whose only member decodes greedily. Skipped,
 * saying why, where the build is absent; CI builds it first.
 */
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decode } from "../gpu-node/blocks/slots/generation.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { greedyStep } from "../gpu-node/engine/greedy-step.js";
import { evaluateProbe } from "../gpu-node/engine/probe.js";
import { randomTokens } from "../gpu-node/verify.js";
import { Xoshiro128 } from "../shared/random.js";
import { noEngineBuildReason } from "./helpers/engine-build.js";
import { syntheticModel } from "./helpers/models.js";
import { skipEachWith } from "./helpers/skip.js";

const NO_ENGINE = await noEngineBuildReason();

/** node-llama-cpp's greedy evaluation of `input`: its first `count` tokens. */
async function libraryTokens(seq: LlamaContextSequence, input: Token[], count: number): Promise<Token[]> {
  const out: Token[] = [];
  for await (const t of seq.evaluate(input, { temperature: 0 })) {
    out.push(t);
    if (out.length >= count) break;
  }
  return out;
}

describe.each(["tiny-llama", "tiny-gemma3"] as const)("native greedy steps on %s", (preset) => {
  skipEachWith(NO_ENGINE, `greedy-step.test (${preset})`);
  let engine: Engine;
  const probe = 300 as Token;
  beforeAll(async () => {
    if (NO_ENGINE) return;
    engine = await Engine.open({
      modelPath: syntheticModel(preset),
      slots: 2,
      contextSize: 512,
      batchSize: 64,
      binary: "lastBuild",
    });
  });
  afterAll(() => engine?.dispose());

  it("gives node-llama-cpp's tokens and leaves the same cells, with input longer than a batch", async () => {
    const api = engine.nativeApi;
    if (!api) throw new Error("the engine build has no native API");
    const prefix = randomTokens(new Xoshiro128(`greedy-step-${preset}`), 150, engine.vocabSize); // > 2 batches
    const [a, b] = [engine.slot(0), engine.slot(1)];
    const expected = await libraryTokens(a, prefix, 20);
    const got: Token[] = [];
    let next: Token[] = prefix;
    for (let i = 0; i < 20; i++) {
      const token = await greedyStep(api, b, next);
      got.push(token);
      next = [token];
    }
    expect(got).toEqual(expected);
    expect(new Set(got).size).toBeGreaterThan(1);
    // node-llama-cpp evaluated every token it yielded but the last; so did the native steps.
    expect(b.nextTokenIndex).toBe(a.nextTokenIndex);
    expect(b.contextTokens).toEqual(a.contextTokens);
    const [pa, pb] = [
      await evaluateProbe(a, probe, engine.vocabSize),
      await evaluateProbe(b, probe, engine.vocabSize),
    ];
    expect(pb.sha256).toBe(pa.sha256);
    await a.clearHistory();
    await b.clearHistory();
  });

  it("undoes a failed step: the sequence keeps its cells and tokens", async () => {
    const api = engine.nativeApi;
    if (!api) throw new Error("the engine build has no native API");
    const seq = engine.slot(0);
    const prefix = randomTokens(new Xoshiro128(`greedy-step-fail-${preset}`), 90, engine.vocabSize);
    await seq.evaluateWithoutGeneratingNewTokens(prefix);
    const before = await evaluateProbe(seq, probe, engine.vocabSize);
    await seq.eraseContextTokenRanges([{ start: prefix.length, end: seq.nextTokenIndex }]);
    // 70 good tokens (a whole batch decoded) then one outside the vocabulary.
    const bad = [
      ...randomTokens(new Xoshiro128("bad"), 70, engine.vocabSize),
      engine.vocabSize + 5,
    ] as Token[];
    await expect(greedyStep(api, seq, bad)).rejects.toThrow(/llama_decode failed/);
    expect(seq.nextTokenIndex).toBe(prefix.length);
    expect((await evaluateProbe(seq, probe, engine.vocabSize)).sha256).toBe(before.sha256);
    await seq.clearHistory();
  });

  it("is what the batch loop takes for a greedy step alone, and not for sampling or two decodes at once", async () => {
    const [a, b] = [engine.slot(0), engine.slot(1)];
    const input = randomTokens(new Xoshiro128(`greedy-step-decode-${preset}`), 40, engine.vocabSize);
    const steps = () => {
      const s = engine.decodeStats.snapshot();
      return { native: s.native.steps, batched: s.batched.steps, pairs: s.batched.bySequences["2"] ?? 0 };
    };
    const s0 = steps();
    const alone = await decode(engine, a, input, { maxTokens: 8 });
    const s1 = steps();
    expect(alone.path).toBe("batched");
    expect([s1.native - s0.native, s1.batched - s0.batched]).toEqual([8, 0]);
    await a.clearHistory();
    await decode(engine, a, input, { maxTokens: 8, sampling: { temperature: 0.8, seed: 1 } });
    const s2 = steps();
    expect([s2.native - s1.native, s2.batched - s1.batched]).toEqual([0, 8]);
    await a.clearHistory();
    const [first, second] = await Promise.all([
      decode(engine, a, input, { maxTokens: 8 }),
      decode(engine, b, input, { maxTokens: 8 }),
    ]);
    expect(steps().pairs - s2.pairs).toBeGreaterThan(0);
    // Same tokens by either path.
    expect(first.tokens).toEqual(alone.tokens);
    expect(second.tokens).toEqual(alone.tokens);
    await a.clearHistory();
    await b.clearHistory();
  });
});
