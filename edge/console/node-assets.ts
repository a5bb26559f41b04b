/**
 * The console's static files on the Node entry: read once from edge/console/public/console/assets/
 * (the directory wrangler's `[assets]` publishes for the Worker), so both runtimes serve the same
 * bytes. uPlot's files there are copies of node_modules/uplot/dist (test/console-assets.test.ts
 * keeps them equal).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ConsoleAssets } from "../http.js";

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

/** The assets directory: next to this file in a checkout, or the checkout's from a build in dist/. */
export function consoleAssetsDir(): string {
  const candidates = [
    fileURLToPath(new URL("./public/console/assets", import.meta.url)),
    fileURLToPath(new URL("../../../edge/console/public/console/assets", import.meta.url)),
  ];
  const found = candidates.find((dir) => existsSync(dir));
  if (!found) throw new Error(`The console's assets are missing (looked in ${candidates.join(", ")}).`);
  return found;
}

/** Loads every asset into memory (a few small files) and serves them by name. */
export function loadConsoleAssets(dir = consoleAssetsDir()): ConsoleAssets {
  const files = new Map<string, { body: Uint8Array<ArrayBuffer>; type: string }>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type) files.set(name, { body: new Uint8Array(readFileSync(join(dir, name))), type });
  }
  return (name) => files.get(name) ?? null;
}
