/**
 * Configuration parsing helpers of both services: the environment (Node's `process.env` or a
 * Worker's bindings) is validated once at start with a zod schema, and every invalid setting is
 * named in one error. Only config modules call these with the real environment.
 */
import { z } from "zod";
import { LOG_LEVELS } from "./logger.js";
import { formatValidationIssues } from "./zod-issues.js";

/** Thrown when the configuration is invalid; the message lists every bad setting. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** The string-valued entries of an environment, empty strings dropped (an empty variable is unset). */
export function envStrings(env: Record<string, unknown>): Record<string, string> {
  const strings: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === "string" && v !== "") strings[k] = v;
  return strings;
}

/**
 * Parses `env` (empty strings unset) with `schema`; a ConfigError `invalid <what>: a: why; b: why`
 * when it does not fit.
 */
export function parseEnv<S extends z.ZodType>(
  schema: S,
  env: Record<string, unknown>,
  what = "configuration",
): z.output<S> {
  const parsed = schema.safeParse(envStrings(env));
  if (!parsed.success)
    throw new ConfigError(`invalid ${what}: ${formatValidationIssues(parsed.error, what)}`);
  return parsed.data;
}

/** An integer setting within [min, max], `fallback` when unset. */
export const intSetting = (min: number, max: number, fallback: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

/** `KVGRAFT_LOG_LEVEL`: debug, info (default), warn, error or silent. */
export const logLevelSetting = z.enum(LOG_LEVELS).default("info");
