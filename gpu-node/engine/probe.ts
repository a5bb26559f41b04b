/**
 * Probes: one token evaluated alone, its whole next-token probability vector (every vocabulary
 * entry, in token order) hashed.
 *
 * node-llama-cpp 3.21.1 exposes no raw logits; `controlledEvaluate` returns probabilities: the
 * addon's own softmax (float32) over the candidates left after the sampler chain. Its defaults
 * (`topK` 40, `topP` 0.95) would leave only the top entries, renormalised. Temperature 0 builds a
 * chain of the greedy sampler alone, which truncates nothing and does not scale the logits, so
 * the softmax covers all `vocab` logits; `topK` 0 (the addon resolves it to the vocabulary
 * size), `topP` 1 and `minP` 0 say the same for any chain that does include those samplers.
 */
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { littleEndianBytes, sha256Hex } from "../../shared/hash.js";
import { exactEvaluation } from "./exact-batching.js";

/** Sampler options under which the probability map holds the full vocabulary. */
const FULL_DISTRIBUTION = { temperature: 0, topK: 0, topP: 1, minP: 0 } as const;

/** The engine's raw answer to a probe: token id to probability, as node-llama-cpp returns it. */
export type ProbeProbabilities = Map<Token, number>;

/** The result of evaluating one probe token. */
export interface ProbeResult {
  /** SHA-256 of the float32 probability vector over all `vocab` entries in token order (little-endian). */
  sha256: string;
  probabilities: Float32Array;
  argmax: number;
  /** Nonzero probabilities that went into the hash (the vocabulary size unless some underflow). */
  entries: number;
}

/**
 * Evaluates `token` alone at the sequence's next position (and alone in its batch: exact-batching.ts) and returns the engine's probability
 * map. Materialising the full vector is costly at a large vocabulary (node-llama-cpp sorts it and
 * builds a JavaScript Map of every entry: hundreds of ms at 262,144 tokens on a loaded CPU), so
 * timed paths evaluate their token plainly and probe afterwards (see `bench/graft-bench.ts` at the top level).
 * The probe token stays in the sequence; callers erase it when they keep the state.
 */
export async function sampleProbe(sequence: LlamaContextSequence, token: Token): Promise<ProbeProbabilities> {
  const [output] = await sequence.controlledEvaluate(
    [[token, { generateNext: { probabilities: true, options: FULL_DISTRIBUTION } }]],
    exactEvaluation,
  );
  const map = output?.next?.probabilities;
  if (!map) throw new Error("the probe produced no probability vector");
  return map;
}

/** The dense float32 vector of a probe's probabilities in token order, its hash and argmax. */
export async function digestProbe(map: ProbeProbabilities, vocabSize: number): Promise<ProbeResult> {
  if (map.size !== vocabSize)
    throw new Error(`the probe returned ${map.size} probabilities for a vocabulary of ${vocabSize}`);
  const probabilities = new Float32Array(vocabSize);
  let argmax = 0;
  let best = -1;
  let entries = 0;
  for (const [id, p] of map) {
    probabilities[id] = p;
    if (p > 0) entries++;
    if (p > best || (p === best && id < argmax)) {
      best = p;
      argmax = id;
    }
  }
  return {
    sha256: await sha256Hex(littleEndianBytes(probabilities)),
    probabilities,
    argmax,
    entries,
  };
}

/** `sampleProbe` then `digestProbe`, for callers that do not time the evaluation. */
export async function evaluateProbe(
  sequence: LlamaContextSequence,
  token: Token,
  vocabSize: number,
): Promise<ProbeResult> {
  return digestProbe(await sampleProbe(sequence, token), vocabSize);
}

/** KL(p || q) in nats over the full vectors; zero exactly when the vectors are equal. */
export function klDivergence(p: Float32Array, q: Float32Array): number {
  let kl = 0;
  for (let i = 0; i < p.length; i++) {
    const a = p[i] ?? 0;
    if (a <= 0) continue;
    const b = Math.max(q[i] ?? 0, 1e-30);
    kl += a * Math.log(a / b);
  }
  return Math.max(0, kl);
}

/** First token id that is neither a special nor a byte token in the generated vocabularies. */
const FIRST_ORDINARY_TOKEN = 259;

/** The probe token of a block: derived from its tokens, so it is the same wherever it is made. */
export function probeTokenFor(tokensSha256: string, vocabSize: number): Token {
  const first = Math.min(FIRST_ORDINARY_TOKEN, vocabSize - 1);
  return (first + (Number.parseInt(tokensSha256.slice(0, 8), 16) % (vocabSize - first))) as Token;
}
