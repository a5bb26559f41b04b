/**
 * Soft concept overlap (issue 16): the Dice overlap of two problems' concepts where a concept of
 * one side that the other lacks still counts as shared when it pairs with a concept of the other
 * side whose word vector is close (concept-vectors.ts, cosine >= router.ts
 * `ROUTER_TUNING.softMatch`): `kids` for `children`, `list` for `sequence`. Concepts the structure
 * checks compare (members of an exclusive group or a group of question alternatives, asked-for
 * quantities) and units never match softly: distributional vectors put antonyms and co-hyponyms
 * close (`older`/`younger` 0.83, `celsius`/`fahrenheit` 0.89), and those words are exactly what
 * tells a near miss from a re-wording.
 */
import { conceptSimilarity } from "./concept-vectors.js";
import { ASKED, canonicalConcept, EXCLUSIVE, QUESTION_ALTERNATIVES, UNIT_CONCEPTS } from "./thesaurus.js";

/**
 * Units the thesaurus does not list (`UNIT_CONCEPTS`): two scales or currencies are close in the
 * vector space (`celsius`/`fahrenheit` 0.89) and a conversion's direction is all that tells them
 * apart.
 */
const MORE_UNITS =
  "degree celsius fahrenheit kelvin gallon quart pint ounce pound ton milliliter milligram euro yen rupee";

/** Concepts that only ever match themselves (see the module comment). */
const EXACT_ONLY = new Set([
  ...EXCLUSIVE.flatMap((g) => g.members),
  ...QUESTION_ALTERNATIVES.flat(),
  ...ASKED,
  ...UNIT_CONCEPTS,
  ...MORE_UNITS.split(" ").map(canonicalConcept),
]);

/** A soft match: a concept of one side, the concept of the other it pairs with, their cosine. */
export interface SoftPair {
  from: string;
  to: string;
  cosine: number;
}

/**
 * The Dice overlap of `a` and `b` with soft matches: a concept of one side that the other lacks
 * counts as shared when it is paired with a concept of the other side that the first lacks, with a
 * cosine of at least `least`; each concept pairs at most once, the closest pairs first (so `pay`
 * and `put` cannot both match `work`). Returns the overlap without soft matches (`exact`) and the
 * pairs (for the decision's trace) too.
 */
export function softDice(
  a: Set<string>,
  b: Set<string>,
  least: number,
): { score: number; exact: number; pairs: SoftPair[] } {
  if (a.size + b.size === 0) return { score: 0, exact: 0, pairs: [] };
  const onlyA = [...a].filter((c) => !b.has(c) && !EXACT_ONLY.has(c));
  const onlyB = [...b].filter((c) => !a.has(c) && !EXACT_ONLY.has(c));
  let shared = 0;
  for (const c of a) if (b.has(c)) shared += 2;
  const exact = shared / (a.size + b.size);
  const candidates: SoftPair[] = [];
  for (const from of onlyA)
    for (const to of onlyB) {
      const cosine = conceptSimilarity(from, to);
      if (cosine >= least) candidates.push({ from, to, cosine });
    }
  candidates.sort((x, y) => y.cosine - x.cosine);
  // `onlyA` and `onlyB` are disjoint: one set holds the concepts paired on either side.
  const used = new Set<string>();
  const pairs: SoftPair[] = [];
  for (const pair of candidates) {
    if (used.has(pair.from) || used.has(pair.to)) continue;
    used.add(pair.from);
    used.add(pair.to);
    pairs.push(pair);
    shared += 2;
  }
  return { score: shared / (a.size + b.size), exact, pairs };
}
