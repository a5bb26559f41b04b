import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BACKENDS } from "./helpers/sandbox.js";

let dir: string;
let program: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-sandbox-cli-"));
  program = join(dir, "product.py");
  writeFileSync(program, "print('multiplying')\nprint(PARAMS[0] * PARAMS[1])\n");
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kvgraft(backend: string | undefined, ...args: string[]) {
  const child = spawnSync("node", ["--import", "tsx", "cli/main.ts", "sandbox", ...args], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, KVGRAFT_SANDBOX: backend ?? "" },
  });
  const lines = child.stdout.trimEnd().split("\n");
  return {
    code: child.status,
    stdout: child.stdout,
    stderr: child.stderr,
    last: lines[lines.length - 1] ?? "",
  };
}

describe.each(BACKENDS)("kvgraft sandbox with KVGRAFT_SANDBOX=$mode", ({ mode, skip }) => {
  it("runs a program and prints the JSON verdict last", (ctx) => {
    ctx.skip(skip !== null, skip ?? undefined);
    const run = kvgraft(mode, "--file", program, "--params", "[6, 7]", "--expect", "42", "--json");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("verdict: ok");
    const result = JSON.parse(run.last) as Record<string, unknown>;
    expect(result).toMatchObject({ verdict: "ok", stdout: "multiplying\n42\n", stderr: "" });
    expect(Object.keys(result).sort()).toEqual([
      "cpuMs",
      "isolation",
      "stderr",
      "stdout",
      "verdict",
      "wallMs",
    ]);
    expect(result.isolation).toBe(mode);
    expect(run.stdout).toContain(`isolation: ${mode}`);
  });

  it("exits 1 when the verdict is not ok", (ctx) => {
    ctx.skip(skip !== null, skip ?? undefined);
    const run = kvgraft(mode, "--file", program, "--params", "[6, 8]", "--expect", "42", "--json");
    expect(run.code).toBe(1);
    expect(JSON.parse(run.last)).toMatchObject({ verdict: "wrong_answer" });
  });
});

describe("kvgraft sandbox", () => {
  it("uses WebAssembly by default", () => {
    const run = kvgraft(undefined, "--file", program, "--params", "[6, 7]", "--json");
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.last)).toMatchObject({ verdict: "ok", isolation: "wasm" });
  });

  it.each([
    ["bad --params JSON", ["--file", "PROGRAM", "--params", "[6,"]],
    ["non-numeric --params", ["--file", "PROGRAM", "--params", '["6"]']],
    ["a missing file", ["--file", "/nonexistent/program.py"]],
    ["no --file", []],
  ])("exits 2 for %s", (_, args) => {
    const run = kvgraft(undefined, ...args.map((arg) => (arg === "PROGRAM" ? program : arg)));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("kvgraft sandbox:");
  });
});
