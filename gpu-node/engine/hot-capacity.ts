/**
 * How many sequence slots (the hot tier: one resident block each) fit in the VRAM left after
 * the model: each slot owns a full context of KV cells, so the count follows free memory rather
 * than a fixed small number (a 12B f16 model leaves ~110 GB of an H200, ~23 slots of 12k f16 tokens).
 */
import { GgmlType, type Llama, type LlamaModel } from "node-llama-cpp";

/** Fewest and most slots; llama.cpp allows at most 256 sequences per context. */
const MIN_SLOTS = 2;
const MAX_SLOTS = 256;

export interface HotCapacityOptions {
  contextSize: number;
  batchSize: number;
  flashAttention: boolean;
  swaFullCache: boolean;
  kvType: "F16" | "Q8_0";
  /** Share of the free VRAM the slots may take (the rest stays for compute buffers and others). */
  vramShare?: number;
}

/**
 * Slots that fit in the device's memory beside the model: from node-llama-cpp's own estimates of
 * the model and of a context with one and with two sequences (their difference is one slot's KV
 * cells). It starts from the device's total memory, not what is free now, because the slot count
 * is part of the engine fingerprint (llama.cpp writes the stream count into every state): the
 * same GPU, model and configuration must always give the same count. On the CPU, the minimum.
 */
export async function hotSlotsForVram(
  llama: Llama,
  model: LlamaModel,
  options: HotCapacityOptions,
): Promise<number> {
  if (llama.gpu === false || model.gpuLayers === 0) return MIN_SLOTS;
  const estimate = (sequences: number) =>
    model.fileInsights.estimateContextResourceRequirementsV2({
      contextSize: options.contextSize,
      modelGpuLayers: model.gpuLayers,
      batchSize: options.batchSize,
      sequences,
      flashAttention: options.flashAttention,
      swaFullCache: options.swaFullCache,
      kvCacheKeyType: GgmlType[options.kvType],
      kvCacheValueType: GgmlType[options.kvType],
    });
  const [one, two, vram] = await Promise.all([estimate(1), estimate(2), llama.getVramState()]);
  const weights = model.fileInsights.estimateModelResourceRequirements({
    gpuLayers: model.gpuLayers,
  }).gpuVram;
  const perSlot = Math.max(1, two.gpuVram - one.gpuVram);
  const fixed = Math.max(0, one.gpuVram - perSlot);
  const room = vram.total * (options.vramShare ?? 0.85) - weights - fixed;
  return Math.max(MIN_SLOTS, Math.min(MAX_SLOTS, Math.floor(room / perSlot)));
}
