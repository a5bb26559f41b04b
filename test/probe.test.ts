/**
 * The probe on real llama.cpp inference: it hashes every vocabulary entry (node-llama-cpp's
 * sampler defaults would keep only the top ~40), the hash is a function of the state, and KL is
 * taken over the full vectors.
 */
import type { Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine } from "../gpu-node/engine/engine.js";
import { digestProbe, evaluateProbe, klDivergence, sampleProbe } from "../gpu-node/engine/probe.js";
import { randomTokens } from "../gpu-node/verify.js";
import { littleEndianBytes, sha256Hex } from "../shared/hash.js";
import { Xoshiro128 } from "../shared/random.js";
import { syntheticModel } from "./helpers/models.js";

describe("probe on tiny-llama", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 1, contextSize: 256 });
  });
  afterAll(() => engine?.dispose());

  const PROBE = 300 as Token;

  async function probeAfter(tokens: Token[]) {
    const seq = engine.slot(0);
    await seq.clearHistory();
    await seq.evaluateWithoutGeneratingNewTokens(tokens);
    return evaluateProbe(seq, PROBE, engine.vocabSize);
  }

  it("hashes all vocab entries: the float32 vector in token order, every probability nonzero", async () => {
    expect(engine.vocabSize).toBe(1024);
    const tokens = randomTokens(new Xoshiro128("probe-full"), 100, engine.vocabSize);
    const seq = engine.slot(0);
    await seq.clearHistory();
    await seq.evaluateWithoutGeneratingNewTokens(tokens);
    const map = await sampleProbe(seq, PROBE);
    expect(map.size).toBe(engine.vocabSize);
    expect(seq.nextTokenIndex).toBe(tokens.length + 1);
    const probe = await digestProbe(map, engine.vocabSize);
    expect(probe.entries).toBe(engine.vocabSize);
    expect(probe.probabilities.every((p) => p > 0)).toBe(true);
    const sum = probe.probabilities.reduce((a, b) => a + b, 0);
    expect(sum).toBeCloseTo(1, 4);
    // The hash is exactly the SHA-256 of the dense little-endian float32 vector.
    const dense = new Float32Array(engine.vocabSize);
    for (const [id, p] of map) dense[id] = p;
    expect(probe.sha256).toBe(await sha256Hex(littleEndianBytes(dense)));
    expect(probe.argmax).toBe(dense.indexOf(Math.max(...dense)));
  });

  it("refuses to digest a truncated map instead of hashing zeros", async () => {
    const top = new Map<Token, number>([
      [5 as Token, 0.6],
      [7 as Token, 0.4],
    ]);
    await expect(digestProbe(top, engine.vocabSize)).rejects.toThrow(
      /2 probabilities for a vocabulary of 1024/,
    );
  });

  it("the same state gives the same hash; a state one token different gives another, KL > 0 over the full vectors", async () => {
    const tokens = randomTokens(new Xoshiro128("probe-state"), 120, engine.vocabSize);
    const changed = [...tokens];
    changed[60] = ((tokens[60] as number) + 1) as Token;
    const a = await probeAfter(tokens);
    const again = await probeAfter(tokens);
    const b = await probeAfter(changed);
    expect(again.sha256).toBe(a.sha256);
    expect(klDivergence(a.probabilities, again.probabilities)).toBe(0);
    expect(b.sha256).not.toBe(a.sha256);
    expect(b.entries).toBe(engine.vocabSize);
    expect(klDivergence(a.probabilities, b.probabilities)).toBeGreaterThan(0);
    // Outside the top 40 the vectors differ too: the tail is in the hash.
    const order = [...a.probabilities.keys()].sort(
      (i, j) => (a.probabilities[j] as number) - (a.probabilities[i] as number),
    );
    const tail = order.slice(40);
    expect(tail.some((i) => a.probabilities[i] !== b.probabilities[i])).toBe(true);
    expect(tail.every((i) => (a.probabilities[i] as number) > 0)).toBe(true);
  });
});
