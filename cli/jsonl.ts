/** JSON-lines input files of the CLI, each line checked against a schema. */
import { readFile } from "node:fs/promises";
import type { z } from "zod";
import { UsageError } from "./args.js";

/**
 * The lines of `path` (blank ones skipped), each parsed and checked; a mistake is a usage error
 * naming `label` (default the path) and the line's number.
 */
export async function readJsonl<T>(path: string, schema: z.ZodType<T>, label = path): Promise<T[]> {
  const text = await readFile(path, "utf8").catch((err: NodeJS.ErrnoException) => {
    throw new UsageError(`cannot read ${label}: ${err.code ?? err.message}`);
  });
  return text
    .split("\n")
    .map((line, i) => [line, i + 1] as const)
    .filter(([line]) => line.trim() !== "")
    .map(([line, n]) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw new UsageError(`${label}:${n}: not JSON`);
      }
      const parsed = schema.safeParse(value);
      if (!parsed.success)
        throw new UsageError(`${label}:${n}: ${parsed.error.issues[0]?.message ?? "invalid"}`);
      return parsed.data;
    });
}
