/**
 * Every problem family, and the fixed split of the embedded model's training: the held-out
 * families never appear in training data, and in every other family the last phrasing is held out.
 */
import { ALGEBRA } from "./algebra.js";
import { ARITHMETIC } from "./arithmetic.js";
import { COMBINATORICS } from "./combinatorics.js";
import type { Family } from "./family.js";
import { GEOMETRY } from "./geometry.js";
import { NUMBER_THEORY } from "./number-theory.js";
import { PROBABILITY } from "./probability.js";
import { TIME } from "./time.js";
import { UNITS } from "./units.js";

export type { Family, Params, Rng } from "./family.js";

/** All families, in a fixed order. */
export const FAMILIES: readonly Family[] = [
  ...ARITHMETIC,
  ...UNITS,
  ...TIME,
  ...ALGEBRA,
  ...NUMBER_THEORY,
  ...COMBINATORICS,
  ...GEOMETRY,
  ...PROBABILITY,
];

/**
 * The families held out of all training data: in each domain, the second and the fifth family in
 * file order (a fixed rule, set before any training). The experiments' "new to the model" set.
 */
export const HELD_OUT_FAMILY_IDS: ReadonlySet<string> = new Set(
  [...new Set(FAMILIES.map((f) => f.domain))].flatMap((domain) => {
    const inDomain = FAMILIES.filter((f) => f.domain === domain);
    return [inDomain[1], inDomain[4]].filter((f) => f !== undefined).map((f) => f.id);
  }),
);

/** Whether the model was trained on this family (on all of its phrasings but the last). */
export function isTrainedFamily(family: Family): boolean {
  return !HELD_OUT_FAMILY_IDS.has(family.id);
}

/** The phrasings of a family that training data may use: none for held-out families, else all but the last. */
export function trainingPhrasings(family: Family): number[] {
  if (!isTrainedFamily(family)) return [];
  return family.phrasings.slice(0, -1).map((_, i) => i);
}

/** The held-out phrasing of a trained family (its last). */
export function heldOutPhrasing(family: Family): number {
  return family.phrasings.length - 1;
}
