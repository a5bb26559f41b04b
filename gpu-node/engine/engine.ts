/**
 * The engine: one Llama per process, one model, one context with N sequence slots and a fixed
 * numeric configuration. It owns these native resources and disposes them in reverse order.
 */
import { statSync } from "node:fs";
import { availableParallelism } from "node:os";
import {
  getLlama,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import { DecodeBatcher } from "./batched-decode.js";
import { DecodeStats } from "./decode-stats.js";
import { exactFirstStrategy } from "./exact-batching.js";
import {
  type ContextConfig,
  DEFAULT_HASH_CACHE,
  type EngineFingerprint,
  engineFingerprint,
  type ModelFingerprint,
  modelFileSha256,
} from "./fingerprint.js";
import { hotSlotsForMemory, type SlotSizing } from "./hot-capacity.js";
import { LAST_BUILD_ONLY, type LlamaBinary } from "./llama-binary.js";
import { type NativeStateApi, nativeStateApi } from "./state-memory.js";
import type { StepFillMode } from "./step-fill.js";

/** Which llama.cpp binary to load: the CPU build, the last local build (CUDA on the GPU machine), or auto. */
export type { LlamaBinary };
export type KvType = "f16" | "q8_0";

/** Everything that shapes the engine; fixed for the life of the process. */
export interface EngineOptions {
  modelPath: string;
  /**
   * Sequence slots in the one context (each can hold one block resident: the hot tier), or
   * "vram": as many as fit in the memory left after the model (VRAM on a GPU, RAM on the CPU).
   */
  slots: number | "vram";
  /** Tokens per slot. */
  contextSize: number;
  batchSize?: number;
  flashAttention?: boolean;
  kvType?: KvType;
  /** llama.cpp threads; defaults to the machine's available parallelism (its own default oversubscribes). */
  threads?: number;
  binary?: LlamaBinary;
  /** Keep the full cache on sliding-window models; without it a saved state holds only the window. */
  swaFullCache?: boolean;
  /** Where model hashes are cached. */
  hashCacheFile?: string;
  /**
   * Idle slots between busy ones get a throwaway token in each batched step, and queries joining
   * in consecutive slots are padded to one length, so that the step takes fewer forward passes
   * (step-fill.ts); `fillers`: the idle slots' tokens alone. Default: on a GPU backend, off on the
   * CPU (where a pass costs by its tokens). Never on a sliding-window cache without the full cache.
   */
  stepFill?: StepFillMode;
  /**
   * A batched step's greedy members take their tokens in one native call on our engine build
   * (step-sample.ts; the same tokens). Default: on a GPU backend; off on the CPU, where its
   * threads compete with llama.cpp's (docs/benchmarks.md).
   */
  greedyPick?: boolean;
}

/** The options as the engine runs them: every default applied and the slot count settled. */
export type ResolvedEngineOptions = Required<Omit<EngineOptions, "hashCacheFile" | "slots" | "stepFill">> & {
  slots: number;
  /** How the batched steps fill the gaps between busy slots (settled from the backend and model). */
  stepFill: StepFillMode;
};

let processLlama: Promise<Llama> | undefined;
let processLlamaBinary: LlamaBinary | undefined;

/** The one Llama of this process; asking for a different binary later is an error. */
function llamaFor(binary: LlamaBinary, threads: number): Promise<Llama> {
  if (processLlama && processLlamaBinary !== binary)
    throw new Error(`this process already loaded the '${processLlamaBinary}' llama.cpp binary`);
  processLlamaBinary = binary;
  processLlama ??=
    binary === "lastBuild"
      ? getLlama("lastBuild", { maxThreads: threads, ...LAST_BUILD_ONLY })
      : getLlama({ gpu: binary === "cpu" ? false : "auto", maxThreads: threads, progressLogs: false });
  return processLlama;
}

/** A loaded model and context with numbered slots. */
export class Engine {
  private disposed = false;
  private readonly vocabularySize: number;
  /** Our engine build's native API (state in memory, device copies, greedy steps), or null on the npm prebuilt. */
  readonly nativeApi: NativeStateApi | null;
  /** The decode loop: every busy slot's next token in one llama_decode a step (batched-decode.ts). */
  readonly batcher: DecodeBatcher;
  private constructor(
    /** What every decode call held (decode-stats.ts). */
    readonly decodeStats: DecodeStats,
    /** How the slot count was settled (hot-capacity.ts). */
    readonly slotSizing: SlotSizing,
    readonly llama: Llama,
    readonly model: LlamaModel,
    readonly context: LlamaContext,
    readonly slots: LlamaContextSequence[],
    readonly modelFingerprint: ModelFingerprint,
    readonly engineFingerprint: EngineFingerprint,
    readonly options: ResolvedEngineOptions,
  ) {
    const tokenizer = model.fileInfo.metadata.tokenizer as unknown as
      | { ggml?: { tokens?: unknown[] } }
      | undefined;
    this.vocabularySize = tokenizer?.ggml?.tokens?.length ?? 0;
    if (this.vocabularySize === 0) throw new Error("the model file has no tokenizer vocabulary");
    this.nativeApi = nativeStateApi(llama);
    this.batcher = new DecodeBatcher(
      context,
      model,
      decodeStats,
      this.nativeApi,
      slots,
      options.stepFill,
      options.greedyPick,
    );
  }

  /** Loads the model and creates the context; disposes what it made if any step fails. */
  static async open(options: EngineOptions): Promise<Engine> {
    const threads = options.threads ?? defaultThreads(options.modelPath);
    const resolved = {
      modelPath: options.modelPath,
      slots: options.slots,
      contextSize: options.contextSize,
      batchSize: options.batchSize ?? Math.min(512, options.contextSize),
      flashAttention: options.flashAttention ?? true,
      kvType: options.kvType ?? "f16",
      threads,
      binary: options.binary ?? "cpu",
      swaFullCache: options.swaFullCache ?? true,
    } satisfies Required<Omit<EngineOptions, "hashCacheFile" | "stepFill" | "greedyPick">>;
    const [llama, fileHash] = await Promise.all([
      llamaFor(resolved.binary, threads),
      modelFileSha256(options.modelPath, options.hashCacheFile ?? DEFAULT_HASH_CACHE),
    ]);
    const model = await llama.loadModel({
      modelPath: options.modelPath,
      gpuLayers: resolved.binary === "cpu" ? 0 : "max",
    });
    let context: LlamaContext | undefined;
    const decodeStats = new DecodeStats();
    try {
      const ggmlKv = resolved.kvType === "q8_0" ? "Q8_0" : "F16";
      const sizing: SlotSizing =
        resolved.slots === "vram"
          ? await hotSlotsForMemory(llama, model, { ...resolved, kvType: ggmlKv })
          : { slots: resolved.slots, sizedBy: "config" };
      const slots = sizing.slots;
      context = await model.createContext({
        sequences: slots,
        contextSize: resolved.contextSize,
        batchSize: resolved.batchSize,
        flashAttention: resolved.flashAttention,
        threads: { ideal: threads, min: threads },
        swaFullCache: resolved.swaFullCache,
        experimentalKvCacheKeyType: ggmlKv,
        experimentalKvCacheValueType: ggmlKv,
        // llama.cpp's own decode timings (two clock reads per decode), so that a hot graft's token
        // can be split into llama.cpp's time and ours (takeEvalTimings on the engine build).
        performanceTracking: true,
        // Deposits, probes and verification run alone in their batch (see exact-batching.ts).
        batching: {
          itemPrioritizationStrategy: (input) => {
            const batch = exactFirstStrategy(input);
            let tokens = 0;
            for (const entry of batch) tokens += entry.processAmount;
            decodeStats.record("library", batch.length, tokens);
            return batch;
          },
        },
      });
      // No interval checkpoints: node-llama-cpp would save a sliding-window sequence's state to RAM
      // every 8,192 tokens (under the context lock, ~190 ms for gemma3-12b at 11,994 tokens on the
      // H200, stalling the slot's next restore) so that it can erase inside the window later. The
      // block tiers keep the states, and grafts only erase a sequence's tail.
      const sequences = Array.from({ length: slots }, () =>
        (context as LlamaContext).getSequence({ checkpoints: { interval: false } }),
      );
      const contextConfig: ContextConfig = {
        kvKeyType: ggmlKv,
        kvValueType: ggmlKv,
        flashAttention: context.flashAttention === true,
        swaFullCache: resolved.swaFullCache,
        batchSize: context.batchSize,
        sequences: slots,
      };
      const insights = model.fileInfo.metadata.general;
      return new Engine(
        decodeStats,
        sizing,
        llama,
        model,
        context,
        sequences,
        {
          sha256: fileHash.sha256,
          sizeBytes: fileHash.size,
          architecture: String(insights.architecture),
          name: String(insights.name ?? ""),
        },
        await engineFingerprint(llama, contextConfig),
        {
          ...resolved,
          slots,
          stepFill: stepFillFor(options.stepFill, llama, model, resolved.swaFullCache),
          greedyPick: options.greedyPick ?? llama.gpu !== false,
        },
      );
    } catch (err) {
      await context?.dispose();
      await model.dispose();
      throw err;
    }
  }

  /** Tokens in the model's vocabulary (the length of every probability vector). */
  get vocabSize(): number {
    return this.vocabularySize;
  }

  /** Sliding-window size of the model, or null when it has none. */
  get slidingWindow(): number | null {
    return this.model.fileInsights.swaSize ?? null;
  }

  /**
   * Whether a slot's state can be cut back to a prefix by erasing its tail (the hot tier). A
   * sliding-window model without the full cache has overwritten cells outside the window, so
   * truncation there would silently recompute; callers restore from the block file instead.
   */
  get canTruncate(): boolean {
    return this.options.swaFullCache || this.slidingWindow === null;
  }

  /** Tokenizes text as the model does, with the BOS token when the model adds one. */
  tokenize(text: string): Token[] {
    return tokenizeWithBos(this.model, text);
  }

  /** The slot with this index. */
  slot(index: number): LlamaContextSequence {
    const seq = this.slots[index];
    if (!seq) throw new Error(`slot ${index} does not exist (the engine has ${this.slots.length})`);
    return seq;
  }

  /** Disposes context, model and (when last) the Llama; safe to call twice. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.context.dispose();
    await this.model.dispose();
  }
}

/** Models below this file size decode on one thread by default. */
const SMALL_MODEL_BYTES = 64 * 2 ** 20;

/**
 * llama.cpp threads when KV_THREADS is unset: the machine's parallelism, but one for a small model
 * (the embedded one is 14 MB), whose per-token compute is smaller than the threads' per-op
 * synchronization: on the loaded 2-core machine one 30-token reasoning took 608 ms on one thread
 * and 8,692 ms on two (2026-12-01).
 */
function defaultThreads(modelPath: string): number {
  const size = statSync(modelPath, { throwIfNoEntry: false })?.size ?? Number.POSITIVE_INFINITY;
  return size < SMALL_MODEL_BYTES ? 1 : availableParallelism();
}

/** Tokenizes `text` as a deposit does: the BOS token first when the model adds one. */
export function tokenizeWithBos(model: LlamaModel, text: string): Token[] {
  const tokens = model.tokenize(text);
  const bos = model.tokens.bos;
  return bos !== null && model.tokens.shouldPrependBosToken && tokens[0] !== bos ? [bos, ...tokens] : tokens;
}

/**
 * Whether batched steps fill the gaps between busy slots: as asked, else on a GPU backend; never
 * where a token can drop cells (a sliding-window cache without the full cache).
 */
function stepFillFor(
  asked: StepFillMode | undefined,
  llama: Llama,
  model: LlamaModel,
  swaFullCache: boolean,
): StepFillMode {
  const slidingWindow = (model.fileInsights.swaSize ?? 0) > 0;
  if (slidingWindow && !swaFullCache) return false;
  return asked ?? llama.gpu !== false;
}
