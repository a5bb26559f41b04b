/** number-theory families. */
import type { Family } from "./family.js";

export const NUMBER_THEORY: Family[] = [];
