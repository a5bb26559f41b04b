/** geometry families. */
import type { Family } from "./family.js";

export const GEOMETRY: Family[] = [];
