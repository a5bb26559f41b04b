/**
 * Every problem family, and the fixed split of the embedded model's training: the held-out
 * families never appear in training data, and in every other family the last phrasing is held out.
 * A trained family's phrasings are its own (its file) then the extra training phrasings of
 * phrasings/ (two sets written later, from the training phrasings alone), then its held-out
 * phrasing, last.
 * phrasings/fresh.ts is a second held-out set, outside `phrasings`: never trained or tuned on.
 */
import { ALGEBRA } from "./algebra.js";
import { ARITHMETIC } from "./arithmetic.js";
import { COMBINATORICS } from "./combinatorics.js";
import type { Family } from "./family.js";
import { GEOMETRY } from "./geometry.js";
import { NUMBER_THEORY } from "./number-theory.js";
import { MORE_ARITHMETIC_UNITS } from "./phrasings/arithmetic-units.js";
import { FRESH_PHRASINGS } from "./phrasings/fresh.js";
import { MORE_GEOMETRY_PROBABILITY } from "./phrasings/geometry-probability.js";
import { MORE_NUMBER_COMBINATORICS } from "./phrasings/number-combinatorics.js";
import { SECOND_ARITHMETIC_UNITS } from "./phrasings/second-arithmetic-units.js";
import { SECOND_GEOMETRY_PROBABILITY } from "./phrasings/second-geometry-probability.js";
import { SECOND_NUMBER_COMBINATORICS } from "./phrasings/second-number-combinatorics.js";
import { SECOND_TIME_ALGEBRA } from "./phrasings/second-time-algebra.js";
import { MORE_TIME_ALGEBRA } from "./phrasings/time-algebra.js";
import { PROBABILITY } from "./probability.js";
import { TIME } from "./time.js";
import { UNITS } from "./units.js";

export type { Family, Params, Rng } from "./family.js";

/** Extra training phrasings by family id (trained families only; test/families.test.ts checks). */
export const MORE_PHRASINGS: Readonly<Record<string, readonly string[]>> = joinPhrasings([
  // The first set (2026-12-02), then the second (2026-12-03), each family's in that order.
  MORE_ARITHMETIC_UNITS,
  MORE_TIME_ALGEBRA,
  MORE_NUMBER_COMBINATORICS,
  MORE_GEOMETRY_PROBABILITY,
  SECOND_ARITHMETIC_UNITS,
  SECOND_TIME_ALGEBRA,
  SECOND_NUMBER_COMBINATORICS,
  SECOND_GEOMETRY_PROBABILITY,
]);

/** The records' phrasings by family id, concatenated in the records' order. */
function joinPhrasings(
  records: readonly Readonly<Record<string, readonly string[]>>[],
): Record<string, readonly string[]> {
  const joined: Record<string, string[]> = {};
  for (const record of records) {
    for (const [id, list] of Object.entries(record)) joined[id] = [...(joined[id] ?? []), ...list];
  }
  return joined;
}

/** A family with its extra training phrasings inserted before its last (held-out) phrasing. */
function withMorePhrasings(family: Family): Family {
  const more = MORE_PHRASINGS[family.id];
  if (!more) return family;
  const own = family.phrasings;
  return { ...family, phrasings: [...own.slice(0, -1), ...more, own[own.length - 1] as string] };
}

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
].map(withMorePhrasings);

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

/** The second held-out set of a trained family: phrasings written from its method and program alone. */
export function freshPhrasings(family: Family): readonly string[] {
  return isTrainedFamily(family) ? (FRESH_PHRASINGS[family.id] ?? []) : [];
}
