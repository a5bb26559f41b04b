import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The package root: the nearest folder above this module with package.json and edge/ (the
 * checkout when run through tsx, the same folder above dist/ when run from the build).
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "edge"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`package root not found above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}
