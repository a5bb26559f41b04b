import { closeSync, openSync, readSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { type ParseArgsConfig, parseArgs } from "node:util";

/**
 * A user's mistake outside the command line (a missing file, a busy port, a missing program):
 * printed as one line that says what is wrong and what to do, exit code 2, no stack.
 */
export class UserError extends Error {
  override name = "UserError";
}

/** A mistake on the command line: printed as one line pointing to the command's --help, exit code 2. */
export class UsageError extends UserError {
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

/** Reads the text file a flag names; a file that is missing or unreadable is a UserError saying so in words. */
export async function readFlagFile(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR")
      throw new UserError(`${flag} ${path} does not exist; check the path`);
    if (code === "EISDIR") throw new UserError(`${flag} ${path} is a folder; give the path of a file`);
    if (code === "EACCES" || code === "EPERM")
      throw new UserError(`${flag} ${path} cannot be read (no permission); check its permissions`);
    throw err;
  }
}

/**
 * Checks that `path` names a readable GGUF file (its first bytes are the magic "GGUF"), so a wrong
 * path is a one-line UserError instead of an engine stack trace. `source` names where the path
 * came from (e.g. "--model", "MODEL_PATH"). Returns the path.
 */
export function requireGgufFile(path: string, source: string): string {
  const magic = Buffer.alloc(4);
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    readSync(fd, magic, 0, 4, 0);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR")
      throw new UserError(`${source} ${path} does not exist; give the path of a GGUF model file`);
    if (code === "EISDIR")
      throw new UserError(`${source} ${path} is a folder; give the path of a GGUF model file`);
    throw new UserError(
      `${source} ${path} cannot be read (${code ?? (err as Error).message}); check its permissions`,
    );
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (magic.toString("latin1") !== "GGUF")
    throw new UserError(
      `${source} ${path} is not a GGUF model file (it does not start with "GGUF"); give a .gguf model, e.g. one from kvgraft synth-model`,
    );
  return path;
}
