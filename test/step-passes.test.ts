/**
 * How a batched step is cut into forward passes (gpu-node/engine/step-fill.ts): the estimate of
 * llama.cpp's sequential split (src/llama-batch.cpp, split_equal with `sequential`) and the pads
 * that let queries joining in consecutive slots share one pass. Pure functions: the cases are
 * worked by hand from the split's rules.
 */
import { describe, expect, it } from "vitest";
import { stepFillSetting } from "../gpu-node/config.js";
import { forwardPasses, joinerPads, StepFill } from "../gpu-node/engine/step-fill.js";

const entries = (...spec: Array<[number, number]>) => spec.map(([id, tokens]) => ({ id, tokens }));

describe("forwardPasses", () => {
  it("makes one pass of consecutive slots with a token each", () => {
    expect(forwardPasses(entries([0, 1], [1, 1], [2, 1], [3, 1]), 512)).toBe(1);
  });

  it("makes a pass per run of consecutive ids", () => {
    expect(forwardPasses(entries([0, 1], [1, 1], [3, 1], [7, 1], [8, 1]), 512)).toBe(3);
  });

  it("takes one token from every slot first, then each joiner's remainder alone unless they line up", () => {
    // Slots 0-3 decode one token; 1 and 3 also join with queries of 17 and 12 tokens.
    expect(forwardPasses(entries([0, 1], [1, 17], [2, 1], [3, 12]), 512)).toBe(3);
    // Joiners in consecutive slots with equal remainders share one more pass.
    expect(forwardPasses(entries([0, 1], [1, 17], [2, 17], [3, 1]), 512)).toBe(2);
    // Unequal ones: the shorter's remainder ends the run, the longer's rest is a pass of its own.
    expect(forwardPasses(entries([0, 1], [1, 17], [2, 12], [3, 1]), 512)).toBe(3);
  });

  it("takes as many tokens a sequence as all have and the ubatch holds", () => {
    expect(forwardPasses(entries([0, 40], [1, 40]), 512)).toBe(1);
    // 2 sequences x 40 tokens in ubatches of 32: 16 from each a pass.
    expect(forwardPasses(entries([0, 40], [1, 40]), 32)).toBe(3);
  });
});

describe("joinerPads", () => {
  const step = (...spec: Array<[number, number, number?]>) =>
    spec.map(([id, tokens, free]) => ({ id, tokens, free: free ?? 1000 }));

  it("pads a run of consecutive joiners to its longest query, after which they share a pass", () => {
    const s = step([0, 1], [1, 17], [2, 12], [3, 19], [4, 1]);
    const pads = joinerPads(s, 512);
    expect(pads).toEqual([0, 2, 7, 0, 0]);
    const padded = s.map((e, i) => ({ id: e.id, tokens: e.tokens + (pads[i] as number) }));
    expect(forwardPasses(padded, 512)).toBe(2);
    expect(forwardPasses(s, 512)).toBe(4);
  });

  it("leaves lone joiners, decoders and separate runs to themselves", () => {
    expect(joinerPads(step([0, 17], [1, 1], [2, 12], [5, 9], [6, 14]), 512)).toEqual([0, 0, 0, 5, 0]);
  });

  it("pads only where the slot has the cells and within the room left in the batch", () => {
    expect(joinerPads(step([0, 10, 3], [1, 17], [2, 12]), 512)).toEqual([0, 0, 5]);
    expect(joinerPads(step([0, 10], [1, 17], [2, 12]), 6)).toEqual([0, 0, 5]);
    expect(joinerPads(step([0, 10], [1, 17], [2, 12]), 4)).toEqual([0, 0, 0]);
  });
});

describe("KV_STEP_FILL", () => {
  it("pads joiners only when on: `fillers` keeps the idle slots' tokens alone", () => {
    expect(stepFillSetting("auto")).toBeUndefined();
    expect(stepFillSetting("off")).toBe(false);
    for (const [value, pads] of [
      ["on", true],
      ["fillers", false],
      ["off", false],
    ] as const)
      expect(new StepFill([], stepFillSetting(value) as boolean | "fillers").padsJoiners).toBe(pads);
  });
});
