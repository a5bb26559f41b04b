/** time families. */
import type { Family } from "./family.js";

export const TIME: Family[] = [];
