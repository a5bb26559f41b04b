/**
 * The embedded model's layout and training settings (docs/model.md). Changing any of these is a new
 * model: re-run `scripts/gpu-round.sh train-model` and re-export.
 */
import type { ModelSpec } from "../../gpu-node/synth/presets.js";

/** The embedded model, from the package root: what `npm start` runs unless MODEL_PATH names another. */
export const EMBEDDED_MODEL = "models/kvgraft-math.gguf";

/** llama layout: RMSNorm, RoPE, grouped-query attention (4 query heads on 2 KV heads), SwiGLU. */
export const MODEL_SPEC: ModelSpec = {
  arch: "llama",
  vocab: 2048,
  embd: 256,
  layers: 12,
  heads: 4,
  kvHeads: 2,
  headDim: 64,
  ffn: 704,
  contextLength: 2048,
  slidingWindow: 64,
  weights: "f16",
};

/** What tools/model/train.py reads besides the layout. */
export const TRAINING = {
  seed: 0,
  /** Longest transcript trained on, in tokens (longer ones are left out of the data). */
  trainContext: 512,
  ropeBase: 10_000,
  rmsEps: 1e-6,
  batchSize: 128,
  /** Batches of like-length transcripts: runs of this many batches are sorted by length (0: random batches; train.py). */
  bucketBatches: 64,
  steps: 11_000,
  warmupSteps: 200,
  lr: 2e-3,
  weightDecay: 0.1,
  dropout: 0.2,
  evalEvery: 1000,
  /** Transcripts generated: solves and grafts of the trained families' training phrasings. */
  solves: 80_000,
  grafts: 14_000,
  /** Grafts on synthetic families (random text, random programs): learned only by copying the block. */
  syntheticGrafts: 40_000,
  /** Grafts on trained families whose block holds a changed program: the block wins over memory. */
  mutatedGrafts: 12_000,
  /** Held-out phrasings of trained families: scored during training, never trained on. */
  heldOutSolves: 2_000,
} as const;

/** ChatML, which node-llama-cpp resolves to its ChatMLChatWrapper (the dataset step checks it does). */
export const CHAT_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
