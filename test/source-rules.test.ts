/**
 * Rules Biome cannot hold, checked over the real tree, each proven to fire on a file that breaks it:
 * - a production source file (edge/, gpu-node/, shared/) has at most 400 physical lines (Biome's
 *   count skips lines inside block comments and template literals);
 * - the environment is read only in the config modules, in any spelling (`process.env`,
 *   `const { env } = process`, `process["env"]`);
 * - shared/ imports no Node built-in and no package outside the runtime-neutral set;
 * - transitively: production code reaches no tool (cli/, bench/, scripts/, tools/, test/), tools/
 *   reaches none of cli/, bench/ and scripts/, bench/ reaches neither cli/ nor scripts/ (scripts/
 *   are entry points, like cli/), and bench/ and scripts/ reach no test/.
 */
import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const MAX_LINES = 400;
const CONFIG_MODULES = new Set(["gpu-node/config.ts", "edge/config.ts", "cli/config.ts"]);
/** Packages shared/ may import: they run on Workers and Node alike. */
const SHARED_PACKAGES = new Set(["zod", "hono", "aws4fetch", "vitest", "fast-check"]);
const FOLDERS = ["edge", "gpu-node", "shared", "cli", "bench", "scripts", "tools", "test"];

type Tree = Map<string, string>;

function readTree(): Tree {
  const tree: Tree = new Map();
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (entry.name !== "node_modules" && entry.name !== "public") walk(path);
      } else if (/\.(ts|tsx|mts|mjs)$/.test(entry.name) && !entry.name.endsWith(".d.ts"))
        tree.set(path, readFileSync(join(root, path), "utf8"));
    }
  };
  for (const folder of FOLDERS) walk(folder);
  return tree;
}

const isProduction = (path: string) => /^(edge|gpu-node|shared)\//.test(path) && !path.endsWith(".test.ts");
const SPECIFIERS = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'`]([^"'`]+)["'`]/g;

function specifiers(source: string): string[] {
  return [...source.matchAll(SPECIFIERS)].map((m) => m[1] as string);
}

/** The tree file a relative import names (`./x.js` is `./x.ts` or `./x.tsx` in the sources). */
function resolveImport(tree: Tree, from: string, spec: string): string | null {
  if (!spec.startsWith(".")) return null;
  const base = normalize(join(dirname(from), spec)).replaceAll("\\", "/");
  for (const candidate of [base, base.replace(/\.js$/, ".ts"), base.replace(/\.js$/, ".tsx"), `${base}.ts`])
    if (tree.has(candidate)) return candidate;
  return null;
}

/** Physical lines: Biome's count skips those inside block comments and template literals. */
const physicalLines = (source: string) => source.split("\n").length - (source.endsWith("\n") ? 1 : 0);

function tooLong(tree: Tree): string[] {
  return [...tree]
    .filter(([path, source]) => isProduction(path) && physicalLines(source) > MAX_LINES)
    .map(([path, source]) => `${path}: ${physicalLines(source)} lines`);
}

const ENV_READS = [
  /\bprocess\s*\.\s*env\b/,
  /\{[^}]*\benv\b[^}]*\}\s*=\s*process\b/,
  /\bprocess\s*\[\s*["'`]env["'`]\s*\]/,
];

/**
 * The source without its comments. String literals are matched first and kept, so a `//` inside
 * one (a URL) does not hide the rest of its line.
 */
const COMMENTS_OR_STRINGS = /("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|\/\/[^\n]*|\/\*[\s\S]*?\*\//g;
const withoutComments = (source: string) =>
  source.replace(COMMENTS_OR_STRINGS, (_, literal?: string) => literal ?? "");

function envReaders(tree: Tree): string[] {
  return [...tree]
    .filter(([path]) => !path.startsWith("test/") && !path.endsWith(".test.ts") && !CONFIG_MODULES.has(path))
    .filter(([, source]) => ENV_READS.some((re) => re.test(withoutComments(source))))
    .map(([path]) => path);
}

function sharedImports(tree: Tree): string[] {
  const builtins = new Set(builtinModules);
  const out: string[] = [];
  for (const [path, source] of tree) {
    if (!path.startsWith("shared/") || path.endsWith(".test.ts")) continue;
    for (const spec of specifiers(source)) {
      if (spec.startsWith(".")) continue;
      const name = spec.startsWith("@")
        ? spec.split("/").slice(0, 2).join("/")
        : (spec.split("/")[0] as string);
      if (spec.startsWith("node:") || builtins.has(name)) out.push(`${path}: ${spec} (a Node built-in)`);
      else if (!SHARED_PACKAGES.has(name)) out.push(`${path}: ${spec} (not runtime-neutral)`);
    }
  }
  return out;
}

/** Every chain from a file of `from` to a file of a forbidden folder, through relative imports. */
function forbiddenChains(tree: Tree, from: (path: string) => boolean, forbidden: RegExp): string[] {
  const chains: string[] = [];
  for (const start of [...tree.keys()].filter(from)) {
    const seen = new Map<string, string | null>([[start, null]]);
    const queue = [start];
    while (queue.length) {
      const file = queue.shift() as string;
      if (file !== start && forbidden.test(file)) {
        const chain = [file];
        for (let at = seen.get(file); at; at = seen.get(at)) chain.unshift(at);
        chains.push(chain.join(" -> "));
        break;
      }
      for (const spec of specifiers(tree.get(file) ?? "")) {
        const next = resolveImport(tree, file, spec);
        if (next && !seen.has(next)) {
          seen.set(next, file);
          queue.push(next);
        }
      }
    }
  }
  return chains;
}

function violations(tree: Tree): string[] {
  const notTest = (re: RegExp) => (p: string) => re.test(p) && !p.endsWith(".test.ts");
  return [
    ...tooLong(tree),
    ...envReaders(tree).map((p) => `${p}: reads the environment outside a config module`),
    ...sharedImports(tree),
    ...forbiddenChains(tree, notTest(/^(edge|gpu-node|shared)\//), /^(cli|bench|scripts|tools|test)\//),
    ...forbiddenChains(tree, notTest(/^tools\//), /^(cli|bench|scripts)\//),
    ...forbiddenChains(tree, notTest(/^bench\//), /^(cli|scripts)\//),
    ...forbiddenChains(tree, notTest(/^(bench|scripts)\//), /^test\//),
  ];
}

describe("source rules", () => {
  it("hold on the tree", () => {
    expect(violations(readTree())).toEqual([]);
  });

  const cases: [string, Tree][] = [
    [
      "a 401-line file whose lines sit in a block comment",
      new Map([["shared/long.ts", `/*\n${"x\n".repeat(400)}*/\n`]]),
    ],
    [
      "a 401-line file whose lines sit in a template literal",
      new Map([["edge/long.ts", `export const t = \`\n${"x\n".repeat(400)}\`;\n`]]),
    ],
    [
      "`const { env } = process` outside a config module",
      new Map([["gpu-node/x.ts", "const { env } = process;\n"]]),
    ],
    ['`process["env"]` in a tool', new Map([["bench/x.ts", 'const e = process["env"];\n']])],
    [
      "`const { env } = process` after a URL on its line",
      new Map([["edge/x.ts", 'const u = "https://x.test"; const { env } = process;\n']]),
    ],
    ['`import ... from "fs"` in shared/', new Map([["shared/x.ts", 'import { readFileSync } from "fs";\n']])],
    [
      "a Node-only package in shared/",
      new Map([["shared/x.ts", 'import { createClient } from "@libsql/client";\n']]),
    ],
    [
      "bench -> tools -> cli",
      new Map([
        ["bench/a.ts", 'import { b } from "../tools/b.js";\n'],
        ["tools/b.ts", 'export { c as b } from "../cli/c.js";\n'],
        ["cli/c.ts", "export const c = 1;\n"],
      ]),
    ],
    [
      "bench -> scripts -> cli",
      new Map([
        ["bench/a.ts", 'import { b } from "../scripts/b.js";\n'],
        ["scripts/b.ts", 'export { c as b } from "../cli/c.js";\n'],
        ["cli/c.ts", "export const c = 1;\n"],
      ]),
    ],
    [
      "tools -> scripts",
      new Map([
        ["tools/a.ts", 'import "../scripts/b.js";\n'],
        ["scripts/b.ts", ""],
      ]),
    ],
    [
      "edge -> shared -> test (a dynamic import)",
      new Map([
        ["edge/a.ts", 'export const m = await import("../shared/b.js");\n'],
        ["shared/b.ts", 'export * from "../test/helpers/c.js";\n'],
        ["test/helpers/c.ts", "export const c = 1;\n"],
      ]),
    ],
    [
      "scripts -> test",
      new Map([
        ["scripts/a.ts", 'import "../test/b.js";\n'],
        ["test/b.ts", ""],
      ]),
    ],
  ];
  it.each(cases)("fire on %s", (_, tree) => {
    expect(violations(tree).length).toBeGreaterThanOrEqual(1);
  });

  it("allow what the layout allows (config modules, services importing shared/, cli and scripts importing anything)", () => {
    const tree: Tree = new Map([
      ["edge/config.ts", "export const p = process.env.PORT;\n"],
      ["edge/a.ts", 'import { s } from "../shared/s.js";\n'],
      ["shared/s.ts", 'import { z } from "zod";\nexport const s = z.string();\n'],
      ["cli/c.ts", 'import "../edge/a.js";\nimport "../bench/b.js";\n'],
      ["scripts/s.ts", 'import "../cli/c.js";\nimport "../tools/t.js";\n'],
      ["bench/b.ts", 'import "../tools/t.js";\n'],
      ["tools/t.ts", 'import "../gpu-node/g.js";\n'],
      ["gpu-node/g.ts", `${"export const v = 1;\n".repeat(400)}`],
    ]);
    expect(violations(tree)).toEqual([]);
  });
});
