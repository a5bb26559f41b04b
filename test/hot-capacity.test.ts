/**
 * The hot tier sized from memory (gpu-node/engine/hot-capacity.ts): on the CPU, `--slots vram`
 * takes as many slots as fit in the RAM share beside the model, from node-llama-cpp's own
 * estimates, within [2, 256]; the engine opens that many sequences and says how it sized them.
 */
import { totalmem } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine } from "../gpu-node/engine/engine.js";
import { hotSlotsForMemory } from "../gpu-node/engine/hot-capacity.js";
import { syntheticModel } from "./helpers/models.js";

describe("slots sized from memory", () => {
  let engine: Engine;
  const options = {
    contextSize: 2048,
    batchSize: 512,
    flashAttention: true,
    swaFullCache: true,
    kvType: "F16",
  } as const;
  beforeAll(async () => {
    engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 2, contextSize: 1024 });
  });
  afterAll(() => engine?.dispose());

  it("fits the slots in the RAM share beside the model on the CPU", async () => {
    const sizing = await hotSlotsForMemory(engine.llama, engine.model, { ...options, ramShare: 0.002 });
    expect(sizing.sizedBy).toBe("ram");
    const perSlot = sizing.perSlotBytes as number;
    // One slot of tiny-llama at 2,048 tokens: 4 layers x (K + V) x 2 KV heads x 32 x 2,048 x 2 bytes.
    expect(perSlot).toBeGreaterThanOrEqual(4 * 2 * 2 * 32 * 2048 * 2);
    expect(sizing.roomBytes).toBeLessThan(totalmem() * 0.002);
    expect(sizing.slots).toBe(Math.max(2, Math.min(256, Math.floor((sizing.roomBytes as number) / perSlot))));
    // Twice the context: each slot twice the cells, about half the slots.
    const longer = await hotSlotsForMemory(engine.llama, engine.model, {
      ...options,
      contextSize: 4096,
      ramShare: 0.002,
    });
    expect(longer.perSlotBytes).toBeGreaterThan(perSlot * 1.9);
    expect(longer.slots).toBeLessThan(sizing.slots);
  });

  it("stays within 2 and llama.cpp's 256 sequences", async () => {
    expect((await hotSlotsForMemory(engine.llama, engine.model, { ...options, ramShare: 0 })).slots).toBe(2);
    expect((await hotSlotsForMemory(engine.llama, engine.model, { ...options, ramShare: 1 })).slots).toBe(
      256,
    );
  });

  it("opens an engine with that many slots and reports how they were sized", async () => {
    const sized = await Engine.open({
      modelPath: syntheticModel("tiny-llama"),
      slots: "vram",
      contextSize: 256,
    });
    try {
      expect(sized.slotSizing.sizedBy).toBe("ram");
      expect(sized.slots).toHaveLength(sized.slotSizing.slots);
      expect(sized.options.slots).toBe(sized.slotSizing.slots);
      expect(sized.engineFingerprint.context.sequences).toBe(sized.slotSizing.slots);
    } finally {
      await sized.dispose();
    }
  });
});
