/**
 * How a program gets its problem's numbers: one first line `PARAMS = [...]`. A string parameter is
 * an exact numeric literal (shared/params) written as it is: an integer becomes a Python int of any
 * size, a decimal the float Python reads from that text. A plain number is written as JSON (a
 * valid Python literal). Nothing else gets into the line, so it cannot carry code.
 */

import { MAX_PARAM_CHARS, PARAM_LITERAL, type ProgramParam } from "../../shared/params.js";
import { badRequest } from "../errors.js";

const MAX_PARAMS = 10_000;

function literal(p: unknown): string | null {
  if (typeof p === "number") return Number.isFinite(p) ? JSON.stringify(p) : null;
  if (typeof p === "string") return p.length <= MAX_PARAM_CHARS && PARAM_LITERAL.test(p) ? p : null;
  return null;
}

/** The `PARAMS = [...]` line for these parameters; 400 `invalid_params` for anything else. */
export function paramsLine(params: readonly ProgramParam[] | undefined): string {
  const list: readonly unknown[] = params ?? [];
  const literals = Array.isArray(list) && list.length <= MAX_PARAMS ? list.map(literal) : [null];
  if (literals.some((l) => l === null))
    throw badRequest(
      "invalid_params",
      `params must be an array of at most ${MAX_PARAMS} finite numbers or numeric literals of at most ${MAX_PARAM_CHARS} characters`,
    );
  return `PARAMS = [${literals.join(",")}]`;
}
