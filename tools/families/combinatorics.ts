/** combinatorics families. */
import type { Family } from "./family.js";

export const COMBINATORICS: Family[] = [];
