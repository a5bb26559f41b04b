/**
 * The GPU node's error codes are declared once (shared/gpu-errors.ts, re-exported by
 * shared/protocol.ts): over the real tree, every error the node creates goes through
 * gpu-node/errors.ts (whose helpers take only a `GpuErrorCode`), never through shared/errors.ts's
 * untyped helpers or `new DomainError`, and every code literal the node or its HTTP toolkit
 * (shared/http/) throws is in the enum; each rule is proven to fire on a file that breaks it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type GpuErrorCode, gpuErrorCodeSchema } from "../shared/protocol.js";
import type { SignatureErrorCode } from "../shared/signing.js";
import type { verifyUploadGrant } from "../shared/upload-grant.js";

const root = join(import.meta.dirname, "..");
const HELPERS =
  "badRequest|unauthorized|forbidden|notFound|conflict|tooLarge|unprocessable|tooManyRequests|notImplemented|unavailable";
/** The file that narrows shared/errors.ts's helpers to the enum. */
const NODE_ERRORS = "gpu-node/errors.ts";

function sources(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const entry of readdirSync(join(root, d), { withFileTypes: true })) {
      const path = `${d}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts"))
        out.set(path, readFileSync(join(root, path), "utf8"));
    }
  };
  walk(dir);
  return out;
}

/** The code literals a source throws with: a helper's first argument, `nodeError`'s second. */
function thrownCodes(source: string): string[] {
  const helper = new RegExp(`\\b(?:${HELPERS}|routeNotFound)\\(\\s*"([^"]*)"`, "g");
  const status = /\b(?:nodeError|DomainError|GpuError)\(\s*\d+,\s*"([^"]*)"/g;
  return [...source.matchAll(helper), ...source.matchAll(status)].map((m) => m[1] as string);
}

/** Codes thrown that the enum does not declare. */
function undeclared(files: Map<string, string>): string[] {
  const declared = new Set<string>(gpuErrorCodeSchema.options);
  return [...files].flatMap(([path, source]) =>
    thrownCodes(source)
      .filter((code) => !declared.has(code))
      .map((code) => `${path}: "${code}"`),
  );
}

/** Node files that create errors around the enum: shared/errors.ts's helpers, or `new DomainError`. */
function untypedThrows(files: Map<string, string>): string[] {
  const importsHelper = new RegExp(
    `import\\s*\\{[^}]*\\b(?:${HELPERS})\\b[^}]*\\}\\s*from\\s*"[./]*shared/errors\\.js"`,
  );
  return [...files]
    .filter(([path]) => path !== NODE_ERRORS)
    .filter(([, source]) => importsHelper.test(source) || /\bnew\s+DomainError\s*\(/.test(source))
    .map(([path]) => path);
}

describe("GPU error codes", () => {
  const node = sources("gpu-node");
  const toolkit = sources("shared/http");

  it("every code the GPU node and its HTTP toolkit throw is declared in the enum", () => {
    // The scan sees the node's throws (the slot pool's 429, the store's 404), not an empty tree.
    const seen = new Set([...node.values()].flatMap(thrownCodes));
    expect([...seen]).toEqual(expect.arrayContaining(["queue_full", "block_not_found", "block_corrupt"]));
    expect(undeclared(new Map([...node, ...toolkit]))).toEqual([]);
  });

  it("the node creates errors only through gpu-node/errors.ts", () => {
    expect(node.has(NODE_ERRORS)).toBe(true);
    expect(untypedThrows(node)).toEqual([]);
  });

  it("the codes of signatures and upload grants are in the enum (a compile-time check)", () => {
    type GrantCode = Extract<Awaited<ReturnType<typeof verifyUploadGrant>>, { ok: false }>["code"];
    const covered: [SignatureErrorCode, GrantCode] extends [GpuErrorCode, GpuErrorCode] ? true : false = true;
    expect(covered).toBe(true);
  });

  it("the checks fire on a file that breaks them", () => {
    const bare = new Map([
      [
        "gpu-node/server/x.ts",
        'import { conflict } from "../../shared/errors.js";\nthrow conflict(\n  "block_rotten",\n  "no");',
      ],
      ["gpu-node/server/y.ts", 'throw new DomainError(409, "block_corrupt", "x");'],
      [
        "gpu-node/server/z.ts",
        'import { conflict } from "../errors.js";\nthrow conflict("block_corrupt", "x");',
      ],
    ]);
    expect(undeclared(bare)).toEqual(['gpu-node/server/x.ts: "block_rotten"']);
    expect(untypedThrows(bare)).toEqual(["gpu-node/server/x.ts", "gpu-node/server/y.ts"]);
  });
});
