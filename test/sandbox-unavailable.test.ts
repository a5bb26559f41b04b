/**
 * The sandbox fails closed: with bubblewrap hidden from PATH (or no python3) it refuses with 503
 * `sandbox_unavailable` and says what to install, through the API, the pool, the CLI and the GPU
 * node's route. Runs on every machine, with or without bubblewrap installed.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SandboxPool } from "../gpu-node/sandbox/pool.js";
import { Sandbox } from "../gpu-node/sandbox/sandbox.js";

let dir: string;
/** A PATH holding python3 and nothing else. */
let pythonOnly: string;
/** A PATH holding nothing. */
let empty: string;
let program: string;
const hostPath = process.env.PATH;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-sandbox-unavailable-"));
  pythonOnly = join(dir, "python-only");
  empty = join(dir, "empty");
  mkdirSync(pythonOnly);
  mkdirSync(empty);
  const python = execFileSync("python3", ["-c", "import sys; print(sys.executable)"], {
    encoding: "utf8",
  }).trim();
  symlinkSync(python, join(pythonOnly, "python3"));
  program = join(dir, "p.py");
  writeFileSync(program, "print(sum(PARAMS))\n");
});

afterEach(() => {
  process.env.PATH = hostPath;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cli(path: string, args = ["sandbox", "--file", program, "--params", "[40, 2]", "--json"]) {
  const child = spawnSync(process.execPath, ["--import", "tsx", "cli/main.ts", ...args], {
    encoding: "utf8",
    timeout: 60_000,
    env: { PATH: path },
  });
  return { code: child.status, stderr: child.stderr, last: child.stdout.trimEnd().split("\n").at(-1) ?? "" };
}

describe("without bubblewrap", () => {
  it("refuses with sandbox_unavailable and says what to install", async () => {
    process.env.PATH = pythonOnly;
    for (const create of [() => Sandbox.create(), () => SandboxPool.create()]) {
      await expect(create()).rejects.toMatchObject({
        status: 503,
        code: "sandbox_unavailable",
        message: expect.stringContaining("bwrap is not on PATH; install bubblewrap"),
      });
    }
  });

  it("kvgraft sandbox exits 3 with the reason, no stack trace", () => {
    const run = cli(pythonOnly);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain("kvgraft sandbox: programs are not run: bwrap is not on PATH");
    expect(run.stderr).not.toMatch(/^\s+at /m);
    expect(JSON.parse(run.last)).toMatchObject({ error: { code: "sandbox_unavailable" } });
  });

  it("commands that need it (kvgraft eval router) say so, no stack trace", () => {
    const fixtures = join(import.meta.dirname, "fixtures");
    const library = join(fixtures, "router-library.jsonl");
    const run = cli(pythonOnly, [
      "eval",
      "router",
      "--library",
      library,
      "--queries",
      join(fixtures, "router-queries.jsonl"),
    ]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(
      "kvgraft eval router: programs are not run: bwrap is not on PATH; install bubblewrap",
    );
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });
});

describe("without python3", () => {
  it("refuses with a clear error, not a spawn stack trace", async () => {
    process.env.PATH = empty;
    await expect(Sandbox.create()).rejects.toMatchObject({
      status: 503,
      code: "sandbox_unavailable",
      message: "the sandbox needs Python 3: 'python3' was not found on PATH; install python3",
    });
    const run = cli(empty);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain("the sandbox needs Python 3");
    expect(run.stderr).not.toMatch(/ENOENT|^\s+at /m);
  });
});
