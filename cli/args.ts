import { type ParseArgsConfig, parseArgs } from "node:util";

/** A caller mistake on the command line: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

type Options = NonNullable<ParseArgsConfig["options"]>;

/** Parses flags strictly; unknown flags and missing values become a UsageError. */
export function parseFlags<O extends Options>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** Reads a flag as a positive integer (or the fallback when absent). */
export function intFlag(value: unknown, name: string, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw new UsageError(`--${name} must be an integer >= ${min}, got ${String(value)}`);
  return n;
}

/** Reads a comma-separated list of positive integers. */
export function intListFlag(value: unknown, name: string, fallback: number[]): number[] {
  if (value === undefined) return fallback;
  return String(value)
    .split(",")
    .map((part) => intFlag(part.trim(), name, 0, 0));
}

/** Requires a string flag. */
export function requireFlag(value: unknown, name: string): string {
  if (typeof value !== "string" || value.length === 0) throw new UsageError(`--${name} is required`);
  return value;
}

/** Prints the machine-readable result as the last line of stdout. */
export function printJson(result: unknown): void {
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
