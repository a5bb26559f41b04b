/**
 * stepFill "whole" (gpu-node/engine/step-fill.ts, wholeStepPads): a step that queries join pads
 * every member, and the idle slots' fillers, to the longest query, so that the whole step is one
 * forward pass even where the joiners are apart (joinerPads leaves each such joiner a pass of
 * its own). Real llama.cpp (the npm CPU build) on generated models: the passes are llama.cpp's
 * split rules run on each batch as built (forwardPasses), the tokens are compared with each
 * query decoded alone, and no pad or filler cell may be left behind.
 */
import type { Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Decoded, decode } from "../gpu-node/blocks/slots/generation.js";
import { decodeCountsSince } from "../gpu-node/engine/decode-stats.js";
import { Engine } from "../gpu-node/engine/engine.js";
import type { SequenceInternals } from "../gpu-node/engine/state-memory.js";
import { randomTokens } from "../gpu-node/verify.js";
import { Xoshiro128 } from "../shared/random.js";
import { greedyAlone } from "./helpers/greedy-alone.js";
import { syntheticModel } from "./helpers/models.js";

const MAX = 24;

// The last case's batch (64 tokens) holds less than four slots at the 23-token query's width:
// the query's rest waits for the next step, and that step is one pass too.
describe.each([
  ["tiny-llama", 256, 22 + 14, 22 + 23 + 14],
  ["tiny-gemma3", 256, 22 + 14, 22 + 23 + 14],
  ["tiny-llama", 64, 20 + 12 + (1 + 1), 15 + 16 + 7 + (6 + 7 + 6)],
] as const)(
  "one pass a joining step (stepFill whole) on %s, batches of %i tokens",
  (preset, batchSize, nextPads, apartPads) => {
    let engine: Engine;
    beforeAll(async () => {
      engine = await Engine.open({
        modelPath: syntheticModel(preset),
        slots: 4,
        contextSize: 256,
        stepFill: "whole",
        batchSize,
      });
    });
    afterAll(() => engine?.dispose());

    /**
     * Slot `decoding` decodes 4 tokens; right after its first, queries of 23 and 9 tokens join in
     * slots `joiners` at once. Returns the joiners' results and the batched steps' counts.
     */
    async function joinAt(decoding: number, joiners: [number, number], seed: string) {
      const rng = new Xoshiro128(seed);
      const [a, b, c] = [14, 23, 9].map((n) => randomTokens(rng, n, engine.vocabSize)) as [
        Token[],
        Token[],
        Token[],
      ];
      const want = [
        await greedyAlone(engine.slot(joiners[0]), b, MAX),
        await greedyAlone(engine.slot(joiners[1]), c, MAX),
      ];
      for (let i = 0; i < 4; i++) await engine.slot(i).clearHistory();
      const before = engine.decodeStats.snapshot();
      let joined: Promise<Decoded[]> | undefined;
      await decode(engine, engine.slot(decoding), a, {
        maxTokens: 4,
        onToken: () => {
          joined ??= Promise.all(
            joiners.map((slot, k) => decode(engine, engine.slot(slot), k === 0 ? b : c, { maxTokens: MAX })),
          );
        },
      });
      const got = (await joined) as Decoded[];
      const since = decodeCountsSince(before, engine.decodeStats.snapshot()).batched;
      // No pad or filler cell is left: each joiner ends at its last evaluated token, the rest empty.
      const ctx = (engine.slot(0) as unknown as SequenceInternals)._context._ctx as unknown as {
        getSequenceKvCacheMaxPosition(id: number): number;
      };
      joiners.forEach((slot, k) => {
        const input = k === 0 ? b : c;
        expect(engine.slot(slot).nextTokenIndex).toBe(input.length + (got[k]?.tokens.length ?? 0) - 1);
        expect(ctx.getSequenceKvCacheMaxPosition(slot)).toBe(engine.slot(slot).nextTokenIndex - 1);
      });
      for (let i = 0; i < 4; i++)
        if (i !== decoding && !joiners.includes(i)) expect(ctx.getSequenceKvCacheMaxPosition(i)).toBe(-1);
      // The joiners' greedy tokens agree with alone (batched logits differ only in rounding).
      const agree = got.reduce(
        (n, r, k) => n + (r?.tokens ?? []).filter((t, j) => t === want[k]?.[j]).length,
        0,
      );
      expect(agree).toBeGreaterThanOrEqual(MAX);
      for (let i = 0; i < 4; i++) await engine.slot(i).clearHistory();
      return since;
    }

    it("makes the step that joiners in consecutive slots join one pass", async () => {
      expect(engine.options.stepFill).toBe("whole");
      const since = await joinAt(0, [1, 2], `whole-next-${preset}`);
      // The joining step pads slot 0's token by 22 and the 9-token query by 14, to 23 each (in
      // batches of 64: to 21, and the next step's 2-token rest pads the other two by 1 each).
      expect(since.fillers).toBe(nextPads);
      expect(since.passes).toBe(since.steps);
    });

    it("makes the step that joiners apart join one pass, the idle slot between filled to their width", async () => {
      const since = await joinAt(1, [0, 3], `whole-apart-${preset}`);
      // One pass every step; with pads only for consecutive joiners this step would be three.
      expect(since.passes).toBe(since.steps);
      // The joining step: slot 1's token padded by 22, slot 2's filler of 23, the 9-token query by 14
      // (in batches of 64: at a width of 16, then the query's rest of 7).
      expect(since.fillers).toBeGreaterThanOrEqual(apartPads);
    });
  },
);
