/**
 * How many sequence slots (the hot tier: one resident block each) fit in the memory left after
 * the model: VRAM on a GPU, RAM on the CPU. Each slot owns a full context of KV cells, so the
 * count follows memory rather than a fixed small number (a 12B f16 model leaves ~110 GB of an
 * H200, ~23 slots of 12k f16 tokens).
 */
import { totalmem } from "node:os";
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
  /** Share of the device's memory the model and slots may take (the rest stays for compute buffers and others). */
  vramShare?: number;
  /** Share of the machine's RAM the model and slots may take on the CPU (the rest: the warm tier, the OS). */
  ramShare?: number;
}

/** A slot count and where it came from (reported in /health). */
export interface SlotSizing {
  slots: number;
  /** `config`: a number given; `vram` / `ram`: as many as fit in that memory beside the model. */
  sizedBy: "config" | "vram" | "ram";
  /** KV bytes of one slot, and the bytes the slots could take, when sized from memory. */
  perSlotBytes?: number;
  roomBytes?: number;
}

/**
 * Slots that fit in memory beside the model: from node-llama-cpp's own estimates of the model
 * and of a context with one and with two sequences (their difference is one slot's KV cells). It
 * starts from the memory's total, not what is free now, because the slot count is part of the
 * engine fingerprint (llama.cpp writes the stream count into every state): the same machine,
 * model and configuration must always give the same count. VRAM when the model is on a GPU; RAM
 * otherwise (`ramShare` of it, default a half: the warm tier and the OS need the rest).
 */
export async function hotSlotsForMemory(
  llama: Llama,
  model: LlamaModel,
  options: HotCapacityOptions,
): Promise<SlotSizing> {
  const onGpu = llama.gpu !== false && model.gpuLayers > 0;
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
  const [one, two] = await Promise.all([estimate(1), estimate(2)]);
  const weights = model.fileInsights.estimateModelResourceRequirements({ gpuLayers: model.gpuLayers });
  const bytes = (r: { cpuRam: number; gpuVram: number }) => (onGpu ? r.gpuVram : r.cpuRam);
  const total = onGpu
    ? (await llama.getVramState()).total * (options.vramShare ?? 0.85)
    : totalmem() * (options.ramShare ?? 0.5);
  const perSlot = Math.max(1, bytes(two) - bytes(one));
  const fixed = Math.max(0, bytes(one) - perSlot);
  const room = Math.max(0, total - bytes(weights) - fixed);
  return {
    slots: Math.max(MIN_SLOTS, Math.min(MAX_SLOTS, Math.floor(room / perSlot))),
    sizedBy: onGpu ? "vram" : "ram",
    perSlotBytes: perSlot,
    roomBytes: Math.round(room),
  };
}
