/** Probes: one token evaluated alone, its full next-token probability vector hashed. */
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { littleEndianBytes, sha256Hex } from "../../shared/hash.js";

/** The result of evaluating one probe token. */
export interface ProbeResult {
  /** SHA-256 of the float32 probability vector in token order (little-endian). */
  sha256: string;
  probabilities: Float32Array;
  argmax: number;
}

/**
 * Evaluates `token` alone at the sequence's next position and hashes the probability vector.
 * The probe token stays in the sequence; callers erase it when they keep the state.
 */
export async function evaluateProbe(
  sequence: LlamaContextSequence,
  token: Token,
  vocabSize: number,
): Promise<ProbeResult> {
  const [output] = await sequence.controlledEvaluate([
    [token, { generateNext: { probabilities: true, options: { temperature: 1 } } }],
  ]);
  const map = output?.next?.probabilities;
  if (!map) throw new Error("the probe produced no probability vector");
  const probabilities = new Float32Array(vocabSize);
  let argmax = 0;
  let best = -1;
  for (const [id, p] of map) {
    probabilities[id] = p;
    if (p > best || (p === best && id < argmax)) {
      best = p;
      argmax = id;
    }
  }
  return { sha256: await sha256Hex(littleEndianBytes(probabilities)), probabilities, argmax };
}

/** KL(p || q) in nats; zero exactly when the vectors are equal. */
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
