/**
 * Greedy decoding picks, at every step, the token of highest probability in the full distribution
 * (the first one on a tie), on whichever build node-llama-cpp loads: on kvgraft's engine build the
 * greedy sampler alone takes a fast path over the logits (gpu-node/engine/native/addon/
 * greedy-token.diff) instead of node-llama-cpp's candidate array, and must pick the same tokens.
 * CI runs this file on the npm prebuilt and again on the engine build.
 */
import type { Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine } from "../gpu-node/engine/engine.js";
import { evaluateProbe } from "../gpu-node/engine/probe.js";
import { randomTokens } from "../gpu-node/verify.js";
import { Xoshiro128 } from "../shared/random.js";
import { syntheticModel } from "./helpers/models.js";

describe.each(["tiny-llama", "tiny-gemma3"] as const)("greedy decoding on %s", (preset) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open({ modelPath: syntheticModel(preset), slots: 2, contextSize: 512 });
  });
  afterAll(() => engine.dispose());

  it("generates the argmax of the full distribution at every step", async () => {
    const steps = 16;
    const prefix = randomTokens(new Xoshiro128(`greedy-sampling-${preset}`), 120, engine.vocabSize);
    const [a, b] = [engine.slot(0), engine.slot(1)];
    await a.evaluateWithoutGeneratingNewTokens(prefix.slice(0, -1));
    const generated: Token[] = [];
    for await (const t of a.evaluate([prefix.at(-1) as Token], { temperature: 0 })) {
      generated.push(t);
      if (generated.length >= steps) break;
    }
    await b.evaluateWithoutGeneratingNewTokens(prefix.slice(0, -1));
    const argmaxes: Token[] = [];
    let next = prefix.at(-1) as Token;
    for (let i = 0; i < steps; i++) {
      const digest = await evaluateProbe(b, next, engine.vocabSize);
      next = digest.argmax as Token;
      argmaxes.push(next);
    }
    expect(generated).toEqual(argmaxes);
    // Not one token repeated: a decode that ignored the logits would not pass for long.
    expect(new Set(generated).size).toBeGreaterThan(1);
    await a.clearHistory();
    await b.clearHistory();
  });
});
