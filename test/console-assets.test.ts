/**
 * The console's static files: uPlot's files in edge/console/public (what wrangler's `[assets]`
 * publishes for the Worker, and what the Node entry serves) are the installed uplot package's own,
 * byte for byte, so a version bump in package.json cannot leave a stale copy behind; the Node entry
 * serves them and the console's script by name, with their content types, and nothing else.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { consoleAssetsDir, loadConsoleAssets } from "../edge/console/node-assets.js";

const root = join(import.meta.dirname, "..");

describe("console assets", () => {
  it("carry uPlot exactly as installed", () => {
    for (const name of ["uPlot.iife.min.js", "uPlot.min.css"])
      expect(readFileSync(join(consoleAssetsDir(), name)), name).toEqual(
        readFileSync(join(root, "node_modules", "uplot", "dist", name)),
      );
  });

  it("are served by name with their content types, and only they", () => {
    const assets = loadConsoleAssets();
    expect(assets("console.js")?.type).toBe("text/javascript; charset=utf-8");
    expect(assets("uPlot.min.css")?.type).toBe("text/css; charset=utf-8");
    expect(assets("favicon.svg")?.type).toBe("image/svg+xml");
    expect(assets("../node-assets.ts")).toBeNull();
    expect(assets("missing.js")).toBeNull();
  });
});
