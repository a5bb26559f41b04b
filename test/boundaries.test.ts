/**
 * The boundary and size rules of biome.jsonc fire: a copy of the configuration lints a tree of files that
 * each break (or keep) one rule, and Biome must report exactly the expected rule per file. The
 * real tree is checked by `npm run lint`; this proves the rules there are not silently inert.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const IMPORTS = "lint/style/noRestrictedImports";
const ENV = "lint/style/noProcessEnv";
const FILE_LINES = "lint/style/noExcessiveLinesPerFile";
const FUNCTION_LINES = "lint/complexity/noExcessiveLinesPerFunction";

/** A module of `n` lines of statements. */
const lines = (n: number) => Array.from({ length: n }, (_, i) => `export const v${i} = ${i};`).join("\n");
/** A function whose body has `n` lines. */
const longFunction = (n: number) =>
  `export function long(): number {\n  let x = 0;\n${"  x++;\n".repeat(n - 2)}  return x;\n}`;

/** File -> source, and the rules Biome must report for it (none: the file is allowed). */
const cases: Record<string, { source: string; expect: string[] }> = {
  "edge/imports-gpu-node.ts": { source: 'export { x } from "../gpu-node/blocks/x.js";', expect: [IMPORTS] },
  "edge/imports-gpu-node-dynamic.ts": {
    source: 'export const m = await import("../gpu-node/synth/presets.js");',
    expect: [IMPORTS],
  },
  "edge/routes/imports-cli.ts": { source: 'export { x } from "../../cli/args.js";', expect: [IMPORTS] },
  "edge/imports-bench.ts": { source: 'export { x } from "../bench/x.js";', expect: [IMPORTS] },
  "gpu-node/server/imports-edge.ts": { source: 'export { x } from "../../edge/app.js";', expect: [IMPORTS] },
  "gpu-node/imports-scripts.ts": { source: 'export { x } from "../scripts/x.js";', expect: [IMPORTS] },
  "shared/imports-edge.ts": { source: 'export { x } from "../edge/x.js";', expect: [IMPORTS] },
  "shared/http/imports-gpu-node.ts": {
    source: 'export { x } from "../../gpu-node/x.js";',
    expect: [IMPORTS],
  },
  "shared/imports-cli.ts": { source: 'export { x } from "../cli/x.js";', expect: [IMPORTS] },
  "shared/http/imports-node.ts": { source: 'export { createHash } from "node:crypto";', expect: [IMPORTS] },
  "gpu-node/sandbox/reads-env.ts": { source: "export const p = process.env.PATH;", expect: [ENV] },
  "edge/reads-env.ts": { source: "export const p = process.env.PORT;", expect: [ENV] },
  "shared/reads-env.ts": { source: "export const p = process.env.X;", expect: [ENV] },
  "cli/reads-env.ts": { source: "export const p = process.env.X;", expect: [ENV] },
  "bench/reads-env.ts": { source: "export const p = process.env.X;", expect: [ENV] },
  // Small modules in gpu-node/: at most 400 lines a file, 120 a function.
  "gpu-node/too-long.ts": { source: lines(401), expect: [FILE_LINES] },
  "gpu-node/long-enough.ts": { source: lines(400), expect: [] },
  "gpu-node/long-function.ts": { source: longFunction(121), expect: [FUNCTION_LINES] },
  "gpu-node/short-function.ts": { source: longFunction(120), expect: [] },
  // Allowed: the config modules read the environment; services import shared/; tools and tests
  // import anything.
  "gpu-node/config.ts": { source: "export const p = process.env.PATH;", expect: [] },
  "edge/config.ts": { source: "export const p = process.env.PORT;", expect: [] },
  "gpu-node/imports-shared.ts": { source: 'export { x } from "../shared/protocol.js";', expect: [] },
  "cli/imports-services.ts": {
    source: 'export { a } from "../edge/app.js";\nexport { b } from "../gpu-node/config.js";',
    expect: [],
  },
  "bench/imports-gpu-node.ts": { source: 'export { x } from "../gpu-node/engine/engine.js";', expect: [] },
  // Inside edge/: only edge/db/ touches tables (drizzle-orm) and imports nothing else of edge/;
  // routing/ and cluster/ sit under the services, the services under the routes, all under runtime/.
  "edge/services/imports-drizzle.ts": { source: 'export { eq } from "drizzle-orm";', expect: [IMPORTS] },
  "edge/routes/imports-drizzle-core.ts": {
    source: 'export { sqliteTable } from "drizzle-orm/sqlite-core";',
    expect: [IMPORTS],
  },
  "edge/db/imports-drizzle.ts": { source: 'export { eq } from "drizzle-orm";', expect: [] },
  "edge/db/imports-shared.ts": { source: 'export { notFound } from "../../shared/errors.js";', expect: [] },
  "edge/db/imports-services.ts": { source: 'export { x } from "../services/x.js";', expect: [IMPORTS] },
  "edge/db/imports-gpu-node.ts": { source: 'export { x } from "../../gpu-node/x.js";', expect: [IMPORTS] },
  "edge/cluster/imports-services.ts": { source: 'export { x } from "../services/x.js";', expect: [IMPORTS] },
  "edge/routing/imports-routes.ts": { source: 'export { x } from "../routes/x.js";', expect: [IMPORTS] },
  "edge/routing/imports-db.ts": { source: 'export { x } from "../db/library.js";', expect: [] },
  "edge/services/imports-routes.ts": { source: 'export { x } from "../routes/x.js";', expect: [IMPORTS] },
  "edge/services/imports-cli.ts": { source: 'export { x } from "../../cli/args.js";', expect: [IMPORTS] },
  "edge/routes/imports-runtime.ts": { source: 'export { x } from "../runtime/node.js";', expect: [IMPORTS] },
  "edge/routes/imports-services.ts": { source: 'export { x } from "../services/x.js";', expect: [] },
  "edge/console/imports-runtime.ts": { source: 'export { x } from "../runtime/node.js";', expect: [IMPORTS] },
  "edge/console/imports-drizzle.ts": { source: 'export { eq } from "drizzle-orm";', expect: [IMPORTS] },
  "edge/console/imports-services.ts": { source: 'export { x } from "../services/x.js";', expect: [] },
  "bench/imports-cli.ts": { source: 'export { x } from "../cli/args.js";', expect: [IMPORTS] },
  // tools/ (process supervision) serves cli/, bench/ and the tests; production code never imports it.
  "edge/runtime/imports-tools.ts": {
    source: 'export { x } from "../../tools/process/supervise.js";',
    expect: [IMPORTS],
  },
  "gpu-node/imports-tools.ts": {
    source: 'export { x } from "../tools/process/supervise.js";',
    expect: [IMPORTS],
  },
  "shared/imports-tools.ts": {
    source: 'export { x } from "../tools/process/supervise.js";',
    expect: [IMPORTS],
  },
  "tools/process/imports-cli.ts": { source: 'export { x } from "../../cli/args.js";', expect: [IMPORTS] },
  "tools/process/imports-bench.ts": { source: 'export { x } from "../../bench/x.js";', expect: [IMPORTS] },
  "tools/process/reads-env.ts": { source: "export const p = process.env.X;", expect: [ENV] },
  "bench/imports-tools.ts": { source: 'export { x } from "../tools/process/supervise.js";', expect: [] },
  "cli/commands/imports-tools.ts": {
    source: 'export { x } from "../../tools/process/supervise.js";',
    expect: [],
  },
  "cli/config.ts": { source: "export const p = process.env.X;", expect: [] },
  "edge/too-long.ts": { source: lines(401), expect: [FILE_LINES] },
  "edge/cluster/long-function.ts": { source: longFunction(121), expect: [FUNCTION_LINES] },
  "test/reads-env.test.ts": { source: "export const p = process.env.X;", expect: [] },
};

const dir = mkdtempSync(join(tmpdir(), "kvgraft-boundaries-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("import boundaries and process.env (biome.jsonc)", () => {
  it("reports each violation with its rule and nothing else", () => {
    copyFileSync(join(root, "biome.jsonc"), join(dir, "biome.jsonc"));
    for (const [file, { source }] of Object.entries(cases)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), `${source}\n`);
    }
    const run = spawnSync(
      join(root, "node_modules", ".bin", "biome"),
      ["lint", "--vcs-enabled=false", "--reporter=json", "--max-diagnostics=none", ...Object.keys(cases)],
      { cwd: dir, encoding: "utf8" },
    );
    const report = JSON.parse(run.stdout) as {
      diagnostics: { category: string; location: { path: string } }[];
    };
    const found: Record<string, string[]> = Object.fromEntries(Object.keys(cases).map((f) => [f, []]));
    for (const d of report.diagnostics) found[d.location.path]?.push(d.category);
    const expected = Object.fromEntries(Object.entries(cases).map(([f, c]) => [f, c.expect]));
    expect(found).toEqual(expected);
    expect(run.status).toBe(1);
  });
});
