/** units families. */
import type { Family } from "./family.js";

export const UNITS: Family[] = [];
