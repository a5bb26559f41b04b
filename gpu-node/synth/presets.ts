/** Model layouts for generated random-weight GGUF files. */

export type Architecture = "llama" | "qwen3" | "gemma3";
export type WeightType = "f16" | "q8_0";

/** Dimensions of a generated model. */
export interface ModelSpec {
  arch: Architecture;
  vocab: number;
  embd: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ffn: number;
  contextLength: number;
  /** Sliding-window size for gemma3's local layers. */
  slidingWindow: number;
  weights: WeightType;
}

const tiny = {
  vocab: 1024,
  embd: 128,
  layers: 4,
  heads: 4,
  kvHeads: 2,
  headDim: 32,
  ffn: 384,
  contextLength: 8192,
};

/** The dimensions of a 12B model (Gemma 3 12B's), with llama's or gemma3's layer layout. */
const twelveB = {
  vocab: 262144,
  embd: 3840,
  layers: 48,
  heads: 16,
  kvHeads: 8,
  headDim: 256,
  ffn: 15360,
  contextLength: 32768,
};

/** Named presets: tiny ones for CPU tests, 1b and 12b for GPU benchmarks. */
export const PRESETS: Record<
  string,
  Omit<ModelSpec, "weights" | "slidingWindow"> & { slidingWindow?: number }
> = {
  "tiny-llama": { arch: "llama", ...tiny },
  "tiny-qwen3": { arch: "qwen3", ...tiny },
  // Six layers: gemma3 makes every sixth layer global and the other five sliding-window.
  "tiny-gemma3": { arch: "gemma3", ...tiny, layers: 6, slidingWindow: 64 },
  "1b": {
    arch: "llama",
    vocab: 32000,
    embd: 2048,
    layers: 16,
    heads: 32,
    kvHeads: 8,
    headDim: 64,
    ffn: 8192,
    contextLength: 32768,
  },
  "12b": { arch: "llama", ...twelveB },
  // Gemma 3 12B's own layout: five sliding-window layers (window 1,024) to one global, so a saved
  // state holds only the window's cells for 40 of the 48 layers (about 4x smaller than 12b's).
  "gemma3-12b": { arch: "gemma3", ...twelveB, slidingWindow: 1024 },
  // Compact KV state for library-scale benchmarks: 1b-class compute, one KV head of 64.
  "1b-compact-kv": {
    arch: "llama",
    vocab: 32000,
    embd: 2048,
    layers: 16,
    heads: 32,
    kvHeads: 1,
    headDim: 64,
    ffn: 8192,
    contextLength: 131072,
  },
};

/** Resolves a preset plus overrides into a full spec, validating the dimensions. */
export function resolveSpec(preset: string, overrides: Partial<ModelSpec>): ModelSpec {
  const base = PRESETS[preset];
  if (!base) throw new Error(`unknown preset '${preset}' (presets: ${Object.keys(PRESETS).join(", ")})`);
  const spec: ModelSpec = { slidingWindow: 64, weights: "f16", ...base, ...overrides };
  for (const key of [
    "vocab",
    "embd",
    "layers",
    "heads",
    "kvHeads",
    "headDim",
    "ffn",
    "contextLength",
    "slidingWindow",
  ] as const) {
    if (!Number.isInteger(spec[key]) || spec[key] < 1) throw new Error(`${key} must be a positive integer`);
  }
  if (spec.heads % spec.kvHeads !== 0) throw new Error("heads must be a multiple of kvHeads");
  if (spec.weights === "q8_0" && [spec.embd, spec.ffn, spec.heads * spec.headDim].some((d) => d % 32 !== 0))
    throw new Error("q8_0 needs embd, ffn and heads*headDim to be multiples of 32");
  return spec;
}

/** Parameter count of a spec (weights only). */
export function parameterCount(s: ModelSpec): number {
  const attn = s.embd * s.heads * s.headDim * 2 + s.embd * s.kvHeads * s.headDim * 2;
  const ffn = s.embd * s.ffn * 3;
  const output = s.arch === "gemma3" ? 0 : s.vocab * s.embd;
  return s.vocab * s.embd + output + s.layers * (attn + ffn);
}
