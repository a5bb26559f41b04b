/** algebra families. */
import type { Family } from "./family.js";

export const ALGEBRA: Family[] = [];
