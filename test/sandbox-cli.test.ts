import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NO_SANDBOX_REASON } from "./helpers/sandbox.js";

let dir: string;
let program: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-sandbox-cli-"));
  program = join(dir, "product.py");
  writeFileSync(program, "print('multiplying')\nprint(PARAMS[0] * PARAMS[1])\n");
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kvgraft(...args: string[]) {
  const child = spawnSync("node", ["--import", "tsx", "cli/main.ts", "sandbox", ...args], {
    encoding: "utf8",
    timeout: 60_000,
  });
  const lines = child.stdout.trimEnd().split("\n");
  return {
    code: child.status,
    stdout: child.stdout,
    stderr: child.stderr,
    last: lines[lines.length - 1] ?? "",
  };
}

describe("kvgraft sandbox", () => {
  it("runs a program and prints the JSON verdict last", (ctx) => {
    ctx.skip(NO_SANDBOX_REASON !== null, NO_SANDBOX_REASON ?? undefined);
    const run = kvgraft("--file", program, "--params", "[6, 7]", "--expect", "42", "--json");
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
    expect(result.isolation).toBe("bwrap");
  });

  it("exits 1 when the verdict is not ok", (ctx) => {
    ctx.skip(NO_SANDBOX_REASON !== null, NO_SANDBOX_REASON ?? undefined);
    const run = kvgraft("--file", program, "--params", "[6, 8]", "--expect", "42", "--json");
    expect(run.code).toBe(1);
    expect(JSON.parse(run.last)).toMatchObject({ verdict: "wrong_answer" });
  });

  it.each([
    ["bad --params JSON", ["--file", "PROGRAM", "--params", "[6,"]],
    ["non-numeric --params", ["--file", "PROGRAM", "--params", '["6"]']],
    ["a missing file", ["--file", "/nonexistent/program.py"]],
    ["no --file", []],
  ])("exits 2 for %s", (_, args) => {
    const run = kvgraft(...args.map((arg) => (arg === "PROGRAM" ? program : arg)));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("kvgraft sandbox:");
  });
});
