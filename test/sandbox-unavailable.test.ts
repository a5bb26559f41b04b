/**
 * With bubblewrap and python3 hidden from PATH, the default backend (WebAssembly) still runs
 * programs; KVGRAFT_SANDBOX=bwrap fails closed: it refuses with 501 `sandbox_unavailable` (no
 * Retry-After: waiting will not install anything) and says what to install, through the pool, the
 * CLI and the commands that need it; `npm start`'s banner says why nothing was deposited and prints
 * no example that would answer 501, and the edge's /health says degraded. Runs on every machine,
 * with or without bubblewrap installed.
 */
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startEdgeServer } from "../edge/runtime/node.js";
import { SandboxPool } from "../gpu-node/sandbox/pool.js";
import { Sandbox } from "../gpu-node/sandbox/sandbox.js";
import { startGpuNode } from "../gpu-node/server/node.js";
import { silentLogger } from "../shared/http/logger.js";
import { kvgraftSourceArgs, supervise } from "../tools/process/supervise.js";
import { syntheticModel } from "./helpers/models.js";

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
  symlinkSync(findPython(), join(pythonOnly, "python3"));
  program = join(dir, "p.py");
  writeFileSync(program, "print(sum(PARAMS))\n");
});

/**
 * python3's real interpreter: asked of the python3 on PATH (a pyenv shim is a script that needs the
 * PATH this file takes away), else where Debian and python.org put it (.ci/run also runs this file
 * with python3 hidden from PATH; the interpreter is still on disk).
 */
function findPython(): string {
  const asked = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" });
  const executable = asked.status === 0 ? asked.stdout.trim() : "";
  if (executable && existsSync(executable)) return realpathSync(executable);
  const onDisk = ["/usr/bin/python3", "/usr/local/bin/python3"].find((path) => existsSync(path));
  if (!onDisk) throw new Error("python3 is not on this machine (PATH, /usr/bin, /usr/local/bin)");
  return realpathSync(onDisk);
}

afterEach(() => {
  process.env.PATH = hostPath;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cli(
  path: string,
  backend: string | undefined,
  args = ["sandbox", "--file", program, "--params", "[40, 2]", "--json"],
) {
  const child = spawnSync(process.execPath, ["--import", "tsx", "cli/main.ts", ...args], {
    encoding: "utf8",
    timeout: 60_000,
    env: { PATH: path, ...(backend ? { KVGRAFT_SANDBOX: backend } : {}) },
  });
  return { code: child.status, stderr: child.stderr, last: child.stdout.trimEnd().split("\n").at(-1) ?? "" };
}

describe("without bubblewrap or python3", () => {
  it("the default backend runs programs on WebAssembly", async () => {
    process.env.PATH = empty;
    const sandbox = await Sandbox.create();
    try {
      expect(sandbox.isolation).toBe("wasm");
      expect(
        await sandbox.run({ source: "print(sum(PARAMS))", params: [40, 2], expect: "42" }),
      ).toMatchObject({
        verdict: "ok",
        isolation: "wasm",
      });
    } finally {
      sandbox.close();
    }
    const run = cli(empty, undefined);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.last)).toMatchObject({ verdict: "ok", isolation: "wasm", stdout: "42\n" });
  });

  it("KVGRAFT_SANDBOX=bwrap refuses with 501 sandbox_unavailable, no Retry-After, saying what to install", async () => {
    process.env.PATH = pythonOnly;
    for (const create of [
      () => Sandbox.create({ backend: "bwrap" }),
      () => SandboxPool.create({ backend: "bwrap" }),
    ]) {
      await expect(create()).rejects.toMatchObject({
        status: 501,
        code: "sandbox_unavailable",
        retryAfterS: undefined,
        message: expect.stringContaining("bwrap is not on PATH; install bubblewrap"),
      });
    }
  });

  it("kvgraft sandbox with KVGRAFT_SANDBOX=bwrap exits 3 with the reason, no stack trace", () => {
    const run = cli(pythonOnly, "bwrap");
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain(
      "kvgraft sandbox: programs are not run: KVGRAFT_SANDBOX=bwrap, but bwrap is not on PATH",
    );
    expect(run.stderr).not.toMatch(/^\s+at /m);
    expect(JSON.parse(run.last)).toMatchObject({ error: { code: "sandbox_unavailable" } });
  });

  it("an unknown KVGRAFT_SANDBOX is a one-line usage error", () => {
    const run = cli(pythonOnly, "docker");
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain("KVGRAFT_SANDBOX");
    expect(run.stderr).toContain("must be auto, wasm or bwrap");
  });

  it("commands that need it (kvgraft eval router) say so, no stack trace", () => {
    const fixtures = join(import.meta.dirname, "fixtures");
    const library = join(fixtures, "router-library.jsonl");
    const run = cli(pythonOnly, "bwrap", [
      "eval",
      "router",
      "--library",
      library,
      "--queries",
      join(fixtures, "router-queries.jsonl"),
    ]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(
      "kvgraft eval router: programs are not run: KVGRAFT_SANDBOX=bwrap, but bwrap is not on PATH",
    );
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });

  it("KVGRAFT_SANDBOX=bwrap without python3 refuses with a clear error, not a spawn stack trace", async () => {
    process.env.PATH = empty;
    await expect(Sandbox.create({ backend: "bwrap" })).rejects.toMatchObject({
      status: 501,
      code: "sandbox_unavailable",
      message: "the sandbox needs Python 3: 'python3' was not found on PATH; install python3",
    });
    const run = cli(empty, "bwrap");
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain("the sandbox needs Python 3");
    expect(run.stderr).not.toMatch(/ENOENT|^\s+at /m);
  });
});

describe("npm start with KVGRAFT_SANDBOX=bwrap and no bubblewrap", () => {
  it("the banner says why nothing was deposited and what to do, with no example that answers 501; /health is degraded", async () => {
    const dataDir = join(dir, "start");
    // The test's environment without what would change what `start` does; python3 only on PATH.
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) => !["MODEL_PATH", "KVGRAFT_ADMIN_KEY", "KVGRAFT_GPU_SECRET", "LIBSQL_URL", "PORT"].includes(k),
      ),
    );
    const banner: string[] = [];
    const started = supervise({
      name: "kvgraft start",
      args: kvgraftSourceArgs("start", "--data-dir", dataDir),
      cwd: join(import.meta.dirname, ".."),
      env: { ...inherited, PATH: pythonOnly, KVGRAFT_SANDBOX: "bwrap", EDGE_PORT: "0", GPU_PORT: "0" },
      onStdoutLine: (line) => banner.push(line),
    });
    try {
      const t0 = Date.now();
      while (!banner.includes("Ctrl-C stops both services.")) {
        if (started.child.exitCode !== null || Date.now() - t0 > 120_000)
          throw new Error(`no banner (exit ${started.child.exitCode}): ${started.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const text = banner.join("\n");
      expect(text).toMatch(/^ {2}sandbox {3}NONE: programs are not run \(.*bwrap is not on PATH/m);
      expect(text).toMatch(
        /^ {2}library {3}0\/12 starter problems deposited and verified; 12 NOT deposited \(sandbox_unavailable/m,
      );
      expect(text).toContain("answer 501 sandbox_unavailable, and /health says degraded");
      expect(text).toContain("unset KVGRAFT_SANDBOX");
      expect(text).toContain("Nothing was deposited (12 starter problems need the sandbox");
      expect(text).not.toContain("a verified answer from the library");
      expect(text).not.toContain("/v1/solve");
      expect(text).not.toContain("/admin/solutions");
      const url = /^ {2}edge {6}(\S+)/m.exec(text)?.[1];
      const key = /^ {2}admin key (\S+)/m.exec(text)?.[1];
      // What the banner says: the library is empty, a solve answers 501; the library curl works.
      const auth = { authorization: `Bearer ${key}` };
      const library = await fetch(`${url}/v1/library?limit=5`, { headers: auth });
      expect({ status: library.status, body: await library.json() }).toMatchObject({
        status: 200,
        body: { items: [] },
      });
      const solve = await fetch(`${url}/v1/solve`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ problem: "What is 40 plus 2?" }),
      });
      expect(solve.status).toBe(501);
      const health = await fetch(`${url}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({
        status: "degraded",
        db: { status: "ok", writable: true },
        gpu: {
          status: "ok",
          sandbox: { isolation: "none", reason: expect.stringContaining("bwrap is not on PATH") },
        },
      });
    } finally {
      await started.stop(10_000);
    }
  }, 180_000);
});

describe("a real edge and GPU node whose sandbox cannot run (KVGRAFT_SANDBOX=bwrap, no bwrap)", () => {
  it("answer 501 with x-should-retry: false and no Retry-After, and the openai client does not retry", async () => {
    const secret = "sandbox-unavailable-secret-0123456789";
    const model = syntheticModel("tiny-llama");
    process.env.PATH = pythonOnly;
    const node = await startGpuNode(
      {
        env: { MODEL_PATH: model, KVGRAFT_GPU_SECRET: secret, KVGRAFT_SANDBOX: "bwrap" },
        port: 0,
        dataDir: join(dir, "gpu"),
      },
      silentLogger,
    );
    const edge = await startEdgeServer({
      env: {
        LIBSQL_URL: `file:${join(dir, "edge.db")}`,
        KVGRAFT_GPU_URL: node.url,
        KVGRAFT_GPU_SECRET: secret,
        KVGRAFT_FLYWHEEL: "off",
      },
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger,
    });
    try {
      const key = edge.generatedAdminKey ?? "";
      const post = (path: string, body: unknown) =>
        fetch(`${edge.url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const refusals = {
        deposit: await post("/admin/solutions", {
          problem: "A farmer has 12 cows and buys 5 more. How many cows does the farmer have?",
          solution: "12 and 5 make 17.",
          program: "print(sum(PARAMS))",
          answer: "17",
        }),
        solve: await post("/v1/solve", { problem: "What is 12 plus 30?" }),
        chat: await post("/v1/chat/completions", {
          model: "kvgraft",
          messages: [{ role: "user", content: "What is 12 plus 30?" }],
        }),
      };
      for (const [name, res] of Object.entries(refusals)) {
        const body = await res.text();
        expect(res.status, `${name}: ${body}`).toBe(501);
        expect(res.headers.get("x-should-retry"), name).toBe("false");
        expect(res.headers.get("retry-after"), name).toBeNull();
        expect(body, name).toContain("sandbox_unavailable");
      }
      // The official client (default maxRetries 2) honours the header: one request, no retry.
      let requests = 0;
      const client = new OpenAI({
        baseURL: `${edge.url}/v1`,
        apiKey: key,
        fetch: (input, init) => {
          requests++;
          return fetch(input, init);
        },
      });
      const failed = await client.chat.completions
        .create({ model: "kvgraft", messages: [{ role: "user", content: "What is 12 plus 30?" }] })
        .catch((err: unknown) => err);
      expect(failed).toBeInstanceOf(OpenAI.APIError);
      expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(501);
      expect(requests).toBe(1);
    } finally {
      await edge.close();
      await node.stop();
    }
  }, 120_000);
});
