/**
 * Soft concept overlap (issue 16): the Dice overlap of two problems' concepts where a concept of
 * one side that the other lacks still counts as shared when the other side has a concept whose
 * word vector is close (concept-vectors.ts, cosine >= router.ts `ROUTER_TUNING.softMatch`): `kids`
 * for `children`, `revenue` for `sales`. Concepts the structure checks compare (members of an exclusive group or a
 * group of question alternatives, asked-for quantities, units) never match softly: distributional
 * vectors put antonyms and co-hyponyms close (`older`/`younger` 0.83, `celsius`/`fahrenheit` 0.89),
 * and those words are exactly what tells a near miss from a re-wording.
 */
import { conceptSimilarity } from "./concept-vectors.js";
import { ASKED, EXCLUSIVE, QUESTION_ALTERNATIVES, UNIT_CONCEPTS } from "./thesaurus.js";

/** Concepts that only ever match themselves (see the module comment). */
const EXACT_ONLY = new Set([
  ...EXCLUSIVE.flatMap((g) => g.members),
  ...QUESTION_ALTERNATIVES.flat(),
  ...ASKED,
  ...UNIT_CONCEPTS,
]);

/** A soft match: a concept of one side, the other side's closest concept, their cosine. */
export interface SoftPair {
  from: string;
  to: string;
  cosine: number;
}

/** The concept of `others` closest to `concept` with a cosine of at least `least`, or null. */
export function softMatch(concept: string, others: Iterable<string>, least: number): SoftPair | null {
  if (EXACT_ONLY.has(concept)) return null;
  let best: SoftPair | null = null;
  for (const other of others) {
    if (EXACT_ONLY.has(other)) continue;
    const cosine = conceptSimilarity(concept, other);
    if (cosine >= least && (!best || cosine > best.cosine)) best = { from: concept, to: other, cosine };
  }
  return best;
}

/**
 * The Dice overlap of `a` and `b` with soft matches: each concept of either side counts as shared
 * when the other side has it or a concept it lacks itself with a cosine of at least `least`.
 * Returns the pairs matched softly too (for the decision's trace).
 */
export function softDice(
  a: Set<string>,
  b: Set<string>,
  least: number,
): { score: number; pairs: SoftPair[] } {
  if (a.size + b.size === 0) return { score: 0, pairs: [] };
  const onlyA = [...a].filter((c) => !b.has(c));
  const onlyB = [...b].filter((c) => !a.has(c));
  let shared = 2 * (a.size - onlyA.length);
  const pairs: SoftPair[] = [];
  for (const [mine, theirs] of [
    [onlyA, onlyB],
    [onlyB, onlyA],
  ] as const)
    for (const c of mine) {
      const pair = softMatch(c, theirs, least);
      if (pair) {
        shared++;
        pairs.push(pair);
      }
    }
  return { score: shared / (a.size + b.size), pairs };
}
