/**
 * The engine's slots take no interval checkpoints. node-llama-cpp saves a sliding-window
 * sequence's state to RAM every 8,192 tokens by default (under the context lock): on gemma3-12b at
 * 11,994 tokens that stalled the next restore by ~190 ms on the H200 (docs/benchmarks.md). Grafts
 * only erase a sequence's tail and the block tiers keep the states, so the engine turns them off.
 */
import type { Token } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { Engine } from "../gpu-node/engine/engine.js";
import { syntheticModel } from "./helpers/models.js";

describe("engine slots on a sliding-window model", () => {
  it("evaluate past 8,192 tokens without taking a checkpoint", async () => {
    const engine = await Engine.open({
      modelPath: syntheticModel("tiny-gemma3"),
      slots: 1,
      contextSize: 8_320,
      swaFullCache: false,
    });
    try {
      const slot = engine.slot(0);
      // The premise: node-llama-cpp would checkpoint this sequence (sliding window, no full cache).
      expect(slot.needsCheckpoints).toBe(true);
      const tokens = Array.from(
        { length: 8_200 },
        (_, i) => (1 + ((i * 37) % (engine.vocabSize - 1))) as Token,
      );
      await slot.evaluateWithoutGeneratingNewTokens(tokens);
      await slot.controlledEvaluate([[5 as Token, { generateNext: { token: true } }]]);
      expect(slot.nextTokenIndex).toBe(8_201);
      expect(slot.checkpointsMemoryUsage).toBe(0);
    } finally {
      await engine.dispose();
    }
  }, 120_000);
});
