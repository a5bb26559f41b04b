/**
 * Many grafts at once on one engine, in process: `clients` concurrent grafts (closed loop, each
 * client grafts again as soon as its last one ends) for `rounds` grafts each, of one hot block
 * (`hot-1`) or of one block per client (`warm-N`), and the decode calls that occurred meanwhile:
 * how many sequences each `llama_decode` carried, by path (decode-stats.ts). Greedy, fixed token
 * budget. `kvgraft bench batches` runs it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import {
  batchedStepPhases,
  type DecodeCounts,
  decodeCountsSince,
  type StepPhaseMeans,
} from "../gpu-node/engine/decode-stats.js";
import { Engine, type KvType, type LlamaBinary } from "../gpu-node/engine/engine.js";
import type { StepFillMode } from "../gpu-node/engine/step-fill.js";
import { randomTokens } from "../gpu-node/verify.js";
import type { Tier } from "../shared/protocol.js";
import { Xoshiro128 } from "../shared/random.js";

/** `after - before` for each tier, rounded to `digits` decimals. */
function tierDelta(
  after: Record<Tier, number>,
  before: Record<Tier, number>,
  digits: number,
): Record<Tier, number> {
  const round = (x: number) => Number(x.toFixed(digits));
  return {
    hot: round(after.hot - before.hot),
    warm: round(after.warm - before.warm),
    cold: round(after.cold - before.cold),
  };
}

export interface DecodeBatchesOptions {
  modelPath: string;
  slots: number | "vram";
  clients: number;
  rounds: number;
  maxTokens: number;
  /** One block for every client (`hot-1`), or one block per client. */
  workload: "hot-1" | "distinct";
  contextSize?: number;
  blockTokens?: number;
  binary?: LlamaBinary;
  threads?: number;
  /** The engine's `stepFill` (default: its own, on for a GPU backend). */
  stepFill?: StepFillMode;
}

/** How the engine's context was made (what a decode step's attention reads). */
export interface DecodeContext {
  /** Flash attention as the context was created with it (true: llama.cpp's `enabled`, not `auto`). */
  flashAttention: boolean | "auto";
  /** KV cache type of keys and values. */
  kvType: KvType;
  /** Cells per slot (each slot has its own stream of the KV cache) and in all. */
  cellsPerSlot: number;
  cells: number;
  /** Sliding-window layers keep every cell (their full cache), and the model's window (null: none). */
  swaFullCache: boolean;
  slidingWindow: number | null;
  /** Tokens per llama_decode at most. */
  batchSize: number;
  /** Idle slots between busy ones got a throwaway token a step (the engine's `stepFill`). */
  stepFill: StepFillMode;
  /** node-llama-cpp's estimate of the context's memory (KV cache and compute buffers), bytes. */
  memoryBytes: { ram: number; vram: number };
}

export interface DecodeBatchesResult extends StepPhaseMeans {
  workload: string;
  slots: number;
  clients: number;
  grafts: number;
  tokensOut: number;
  wallMs: number;
  graftsPerS: number;
  tokensPerS: number;
  /** Process CPU time (all threads) per generated token: steadier than wall time on a shared machine. */
  cpuMsPerToken: number;
  /** Mean sequences per decode of the generation steps (batched and native paths). */
  meanBatch: number;
  decodes: DecodeCounts;
  outputsAgree: boolean;
  /** The grafts' restores in the measured window, by tier (a hot graft of a slot that holds its
   * block only erases the tail; any other restore moves the block's state into the slot). */
  restores: { hits: Record<Tier, number>; msSum: Record<Tier, number> };
  context: DecodeContext;
}

/** Runs the workload and reports what the decode calls carried. */
export async function benchDecodeBatches(options: DecodeBatchesOptions): Promise<DecodeBatchesResult> {
  const dataDir = mkdtempSync(join(tmpdir(), "kvgraft-batches-"));
  const engine = await Engine.open({
    modelPath: options.modelPath,
    slots: options.slots,
    contextSize: options.contextSize ?? 2048,
    ...(options.binary ? { binary: options.binary } : {}),
    ...(options.threads ? { threads: options.threads } : {}),
    ...(options.stepFill !== undefined ? { stepFill: options.stepFill } : {}),
  });
  const blocks = await BlockService.open({ engine, dataDir, warmDir: join(dataDir, "warm") });
  try {
    const distinct = options.workload === "distinct" ? options.clients : 1;
    const ids: string[] = [];
    for (let b = 0; b < distinct; b++) {
      const tokens = randomTokens(
        new Xoshiro128(`decode-batches-${b}`),
        options.blockTokens ?? 200,
        engine.vocabSize,
      );
      ids.push((await blocks.depositTokens(tokens)).sha256);
    }
    const before = engine.decodeStats.snapshot();
    const tiersBefore = blocks.snapshot();
    const outputs = new Map<string, string>();
    let agree = true;
    let tokensOut = 0;
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await Promise.all(
      Array.from({ length: options.clients }, async (_, c) => {
        const id = ids[c % ids.length] as string;
        for (let r = 0; r < options.rounds; r++) {
          const result = await blocks.graft(id, " The answer is", { maxTokens: options.maxTokens });
          tokensOut += result.tokensOut;
          const seen = outputs.get(id);
          if (seen === undefined) outputs.set(id, result.outputSha256);
          else if (seen !== result.outputSha256) agree = false;
        }
      }),
    );
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const decodes = decodeCountsSince(before, engine.decodeStats.snapshot());
    const tiersAfter = blocks.snapshot();
    const gen = {
      steps: decodes.batched.steps + decodes.native.steps,
      seqs: decodes.batched.sequences + decodes.native.sequences,
    };
    const grafts = options.clients * options.rounds;
    return {
      workload: options.workload === "hot-1" ? "hot-1" : `distinct-${distinct}`,
      slots: engine.slots.length,
      clients: options.clients,
      grafts,
      tokensOut,
      wallMs: Math.round(wallMs),
      graftsPerS: Number(((grafts * 1000) / wallMs).toFixed(2)),
      tokensPerS: Number(((tokensOut * 1000) / wallMs).toFixed(1)),
      cpuMsPerToken: Number(((cpu.user + cpu.system) / 1000 / tokensOut).toFixed(3)),
      meanBatch: gen.steps ? Number((gen.seqs / gen.steps).toFixed(2)) : 0,
      ...batchedStepPhases(decodes),
      decodes,
      outputsAgree: agree,
      restores: {
        hits: tierDelta(tiersAfter.hits, tiersBefore.hits, 0),
        msSum: tierDelta(tiersAfter.restoreMsSum, tiersBefore.restoreMsSum, 1),
      },
      context: {
        flashAttention: engine.context.flashAttention,
        kvType: engine.options.kvType,
        cellsPerSlot: engine.context.contextSize,
        cells: engine.context.getAllocatedContextSize(),
        swaFullCache: engine.options.swaFullCache,
        slidingWindow: engine.slidingWindow,
        batchSize: engine.context.batchSize,
        stepFill: engine.options.stepFill,
        memoryBytes: engine.context.memoryUsage,
      },
    };
  } finally {
    await blocks.close();
    await engine.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
