/**
 * The byte-exact graft proof: for each trial, prefill random tokens in slot A and save the
 * state, probe slot A (fresh), load the state into slot B (graft) and probe it; hash both
 * full probability vectors (every vocabulary entry in token order) and compare them by KL. Optionally measures the shift residual: llama.cpp moves the same
 * cached text K positions by re-rotating its keys (RoPE), once by K and once in two steps of
 * K/2; the two results differ only by float rounding, the same order as the residual of
 * restoring a state at positions other than its own. (node-llama-cpp 3.21.1 exposes no way to
 * prefill at an explicit offset, so the two offsets are reached by re-rotation.)
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { Xoshiro128 } from "../shared/random.js";
import type { Engine } from "./engine/engine.js";
import { exactEvaluation } from "./engine/exact-batching.js";
import { evaluateProbe, klDivergence } from "./engine/probe.js";
import { loadSequenceState } from "./engine/state.js";

export interface VerifyOptions {
  trials: number;
  tokens: number;
  shift?: number;
  seed?: string;
  onTrial?: (trial: TrialResult, index: number) => void;
}

export interface TrialResult {
  shaEqual: boolean;
  kl: number;
  argmaxEqual: boolean;
  freshSha256: string;
  graftSha256: string;
  /** Nonzero probabilities hashed: the fewer of the fresh and the grafted vector's. */
  probeEntries: number;
  stateBytes: number;
  prefillMs: number;
  restoreMs: number;
  shiftKl?: number;
}

export interface VerifyReport {
  trials: number;
  tokens: number;
  shaEqual: number;
  klMedian: number;
  klP99: number;
  argmaxAgreement: number;
  /** Nonzero probabilities that went into each hash (fewest over all trials); the vocabulary size for a random-weight model. */
  probeEntries: number;
  vocabSize: number;
  stateBytes: number;
  prefillMs: number;
  restoreMs: number;
  shift?: number;
  shiftKl?: number;
  shiftKlP99?: number;
  model: Engine["modelFingerprint"];
  engine: Engine["engineFingerprint"];
}

/** Quantile of numbers by nearest rank (0 <= q <= 1). */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

/** Random ordinary tokens (no control or byte tokens) for a trial. */
export function randomTokens(rng: Xoshiro128, count: number, vocabSize: number): Token[] {
  const first = Math.min(259, vocabSize - 1);
  return Array.from({ length: count }, () => (first + (rng.next() % (vocabSize - first))) as Token);
}

/**
 * Prefills `tokens`, then erases the front in the given steps; each erase is a KV shift, and a
 * throwaway evaluation after every step but the last makes llama.cpp apply it (it would
 * otherwise add the deltas and rotate once). Probes at the end.
 */
async function shiftedProbe(
  engine: Engine,
  slot: LlamaContextSequence,
  tokens: Token[],
  steps: number[],
  probe: Token,
) {
  await slot.clearHistory();
  await slot.evaluateWithoutGeneratingNewTokens(tokens, exactEvaluation);
  for (const [i, step] of steps.entries()) {
    await slot.eraseContextTokenRanges([{ start: 0, end: step }]);
    if (i === steps.length - 1) break;
    await slot.evaluateWithoutGeneratingNewTokens([probe], exactEvaluation);
    await slot.eraseContextTokenRanges([{ start: slot.nextTokenIndex - 1, end: slot.nextTokenIndex }]);
  }
  return evaluateProbe(slot, probe, engine.vocabSize);
}

/** Runs the proof on slots 0 (fresh) and 1 (graft) of the engine. */
export async function verifyGraft(engine: Engine, options: VerifyOptions): Promise<VerifyReport> {
  if (engine.slots.length < 2) throw new Error("verify needs at least 2 slots");
  const need = options.tokens + 1 + (options.shift ?? 0);
  if (need > engine.options.contextSize)
    throw new Error(`--tokens plus --shift needs a context of ${need} tokens`);
  const dir = await mkdtemp(join(tmpdir(), "kvgraft-verify-"));
  const [slotA, slotB] = [engine.slot(0), engine.slot(1)];
  const rng = new Xoshiro128(options.seed ?? "verify");
  const results: TrialResult[] = [];
  try {
    for (let i = 0; i < options.trials; i++) {
      const tokens = randomTokens(rng, options.tokens, engine.vocabSize);
      const [probe] = randomTokens(rng, 1, engine.vocabSize) as [Token];
      const file = join(dir, `trial-${i}.state`);
      await slotA.clearHistory();
      let t = performance.now();
      await slotA.evaluateWithoutGeneratingNewTokens(tokens, exactEvaluation);
      const prefillMs = performance.now() - t;
      const { fileSize } = await slotA.saveStateToFile(file);
      const fresh = await evaluateProbe(slotA, probe, engine.vocabSize);
      t = performance.now();
      await loadSequenceState(slotB, file);
      const restoreMs = performance.now() - t;
      const graft = await evaluateProbe(slotB, probe, engine.vocabSize);
      await rm(file, { force: true });
      const trial: TrialResult = {
        shaEqual: fresh.sha256 === graft.sha256,
        kl: klDivergence(fresh.probabilities, graft.probabilities),
        argmaxEqual: fresh.argmax === graft.argmax,
        freshSha256: fresh.sha256,
        graftSha256: graft.sha256,
        probeEntries: Math.min(fresh.entries, graft.entries),
        stateBytes: fileSize,
        prefillMs,
        restoreMs,
      };
      if (options.shift) {
        const text = [...randomTokens(rng, options.shift, engine.vocabSize), ...tokens];
        const half = Math.ceil(options.shift / 2);
        const once = await shiftedProbe(engine, slotB, text, [options.shift], probe);
        const twice = await shiftedProbe(engine, slotB, text, [half, options.shift - half], probe);
        trial.shiftKl = klDivergence(once.probabilities, twice.probabilities);
      }
      results.push(trial);
      options.onTrial?.(trial, i);
    }
  } finally {
    await Promise.all([slotA.clearHistory(), slotB.clearHistory()]);
    await rm(dir, { recursive: true, force: true });
  }
  const kls = results.map((r) => r.kl);
  const shiftKls = results.flatMap((r) => (r.shiftKl === undefined ? [] : [r.shiftKl]));
  return {
    trials: results.length,
    tokens: options.tokens,
    shaEqual: results.filter((r) => r.shaEqual).length,
    klMedian: quantile(kls, 0.5),
    klP99: quantile(kls, 0.99),
    argmaxAgreement: results.filter((r) => r.argmaxEqual).length / Math.max(1, results.length),
    probeEntries: results.length ? Math.min(...results.map((r) => r.probeEntries)) : 0,
    vocabSize: engine.vocabSize,
    stateBytes: results[0]?.stateBytes ?? 0,
    prefillMs: quantile(
      results.map((r) => r.prefillMs),
      0.5,
    ),
    restoreMs: quantile(
      results.map((r) => r.restoreMs),
      0.5,
    ),
    ...(options.shift
      ? { shift: options.shift, shiftKl: quantile(shiftKls, 0.5), shiftKlP99: quantile(shiftKls, 0.99) }
      : {}),
    model: engine.modelFingerprint,
    engine: engine.engineFingerprint,
  };
}
