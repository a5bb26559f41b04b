/** The one formatting of zod validation issues, for error bodies and configuration errors. */
import type { z } from "zod";

/** One validation problem: the dotted path of the field (empty at the root) and what is wrong. */
export interface ValidationIssue {
  path: string;
  message: string;
}

/** The first `max` issues of a validation error, as `{path, message}`. */
export function validationIssues(error: z.ZodError, max = 20): ValidationIssue[] {
  return error.issues.slice(0, max).map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
}

/**
 * The issues as one line, `path: message; path: message`; an issue at the root is named
 * `rootName` (the thing being validated).
 */
export function formatValidationIssues(error: z.ZodError, rootName = "value", max = 20): string {
  return validationIssues(error, max)
    .map((i) => `${i.path || rootName}: ${i.message}`)
    .join("; ");
}
