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
