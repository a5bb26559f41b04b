/** probability families. */
import type { Family } from "./family.js";

export const PROBABILITY: Family[] = [];
