/**
 * End to end through both real services: `kvgraft start --json` (as `npm start` runs it) in a
 * child process takes the embedded model (models/kvgraft-math.gguf), starts the GPU node (llama.cpp on the CPU,
 * the Python sandbox) and the edge, and deposits the starter library; the tests then use the
 * edge's HTTP API only. The model's text is gibberish, so only what does not depend on the
 * model's knowledge is asserted: sources, routes, hashes, token counts, verification.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGpuClient } from "../shared/gpu-client.js";
import { kvgraftSourceArgs, supervise } from "../tools/process/supervise.js";

const root = join(import.meta.dirname, "..");
const START_TIMEOUT_MS = 300_000;
/** Given to `start`, so the test can also talk to the GPU node directly. */
const GPU_SECRET = "e2e-test-secret-0123456789abcdef";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

interface Started {
  child: ChildProcess;
  summary: Json;
  /** What `start` wrote to its terminal's stderr so far. */
  stderr(): string;
}

/** The test's environment without what would change what `start` does. */
const inherited = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !["MODEL_PATH", "KVGRAFT_ADMIN_KEY", "KVGRAFT_GPU_SECRET", "LIBSQL_URL", "PORT"].includes(k),
  ),
);

/** Runs `kvgraft start --json` and resolves with its JSON summary line. */
async function startKvgraft(dataDir: string): Promise<Started> {
  const started = supervise({
    name: "kvgraft start",
    args: kvgraftSourceArgs("start", "--json", "--data-dir", dataDir),
    cwd: root,
    env: { ...inherited, EDGE_PORT: "0", GPU_PORT: "0", KVGRAFT_GPU_SECRET: GPU_SECRET },
    ready: (line) => line as Json,
    readyTimeoutMs: START_TIMEOUT_MS,
  });
  return { child: started.child, summary: await started.ready, stderr: started.stderr };
}

/** Sends `signal` and resolves with the exit code (fails the test after 30 s). */
function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("did not stop within 30 s"));
    }, 30_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    child.kill(signal);
  });
}

let dataDir: string;
let run: Started;
let url: string;
let key: string;

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Json };
}

// The starter library is verified in the sandbox: without bubblewrap every test here skips.

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "kvgraft-e2e-"));
  run = await startKvgraft(dataDir);
  url = run.summary.edgeUrl;
  key = run.summary.adminKey;
}, START_TIMEOUT_MS);

afterAll(async () => {
  if (run?.child.exitCode === null) await stop(run.child, "SIGTERM").catch(() => undefined);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("kvgraft start: GPU node + edge + starter library", () => {
  it("reports both services, the embedded model and the deposited starter library", async () => {
    expect(run.summary).toMatchObject({
      embeddedModel: true,
      sandbox: { isolation: "wasm" },
      starter: { total: 12, deposited: 12, present: 0, failed: [] },
    });
    expect(run.summary.adminKey).toMatch(/^kvg_/);
    // The web console is served by the same edge; without a session it shows the sign-in form.
    expect(run.summary.consoleUrl).toBe(`${url}/console`);
    const consolePage = await fetch(run.summary.consoleUrl);
    expect(consolePage.url).toBe(`${url}/console/signin`);
    expect(await consolePage.text()).toContain('name="key"');
    expect(readFileSync(join(dataDir, "admin.key"), "utf8").trim()).toBe(run.summary.adminKey);
    // The terminal gets a readable line per event, no JSON line per request; the log file has every
    // line of both services as JSON, the requests of the deposits (GPU node) and of this test (edge).
    expect(run.summary.logFile).toBe(join(dataDir, "kvgraft.log"));
    expect(run.stderr()).toMatch(/^\d\d:\d\d:\d\d gpu sandbox: isolation wasm/m);
    expect(run.stderr()).not.toMatch(/^\{/m);
    const logged = readFileSync(run.summary.logFile, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Json);
    expect(
      logged.filter((r) => r.service === "gpu" && r.route === "/v1/blocks").length,
    ).toBeGreaterThanOrEqual(12);
    expect(logged.filter((r) => r.service === "edge").map((r) => `${r.message} ${r.route}`)).toContain(
      "request /console/signin",
    );
    const health = await (await fetch(`${url}/health`)).json();
    expect(health).toMatchObject({ status: "ok", db: { status: "ok" }, gpu: { status: "ok" } });
    const library = await api("GET", "/v1/library?limit=100");
    expect(library.body.items).toHaveLength(12);
    for (const item of library.body.items) {
      expect(item).toMatchObject({ answer: expect.any(String), block: { state: "ready" } });
      // The list carries summaries; the detail route has the verification and the manifest.
      const detail = await api("GET", `/v1/library/${item.id}`);
      expect(detail.body.solutions[0]).toMatchObject({
        verified: true,
        verification: { method: "sandbox", verdict: "ok" },
      });
      expect(detail.body.blocks[0]).toMatchObject({
        state: "ready",
        manifest: { sha256: item.block.sha256 },
      });
    }
  });

  it("fast path: an exact repeat is answered from the library with 0 GPU tokens", async () => {
    const r = await api("POST", "/v1/solve", {
      problem:
        "Sam buys 12 apples at $0.75 each and pays with a $20 bill.  How much change does he get, in dollars?",
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      answer: "11",
      source: "library",
      verified: true,
      cost: { gpuTokensIn: 0, gpuTokensOut: 0, gpuMs: 0 },
      route: { reason: "fingerprint" },
    });
    expect(r.body.route.blockId).toMatch(/^[0-9a-f]{64}$/);
  });

  it("transfer: same template, new numbers, the verified program re-run in the sandbox", async () => {
    const r = await api("POST", "/v1/solve", {
      problem:
        "Sam buys 15 apples at $0.75 each and pays with a $20 bill. How much change does he get, in dollars?",
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      answer: "8.75",
      source: "transfer",
      // A verified program on numbers of the verified kind, sign and role (issue 24): verified.
      verified: true,
      verification: { method: "program_transfer", params: "kind_sign_and_role_match" },
      text: null,
      route: { reason: "template_transfer" },
      cost: { gpuTokensIn: 0, gpuTokensOut: 0 },
      queued: false,
    });
  });

  it("admin deposit: checked program, block on the GPU node, idempotent; graft routes to the block", async () => {
    const entry = {
      problem: "A crate holds 17 rows of 23 jars. How many jars are in the crate?",
      solution: "17 rows of 23 jars make 17 × 23 = 391 jars.",
      program: "print(391)\n", // not parametric: new numbers go to the block (graft), not transfer
      answer: "391",
    };
    const first = await api("POST", "/admin/solutions", entry);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      created: true,
      solution: { verified: true, parametric: false, answer: "391" },
      block: { state: "ready" },
    });
    const blockId = first.body.block.sha256 as string;
    const again = await api("POST", "/admin/solutions", {
      ...entry,
      // Spacing is formatting; letter case is not (it can change the meaning: docs/router.md).
      problem: `  ${entry.problem.replaceAll(" ", "  ")} `,
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, block: { sha256: blockId } });

    const graft = await api("POST", "/v1/solve", {
      problem: "A crate holds 12 rows of 30 jars. How many jars are in the crate?",
      maxTokens: 4,
    });
    expect(graft.status).toBe(200);
    expect(graft.body).toMatchObject({
      source: "graft",
      verified: false,
      route: { blockId, reason: "template_graft", score: 1 },
      hashes: { blockSha256: blockId },
    });
    expect(graft.body.cost.gpuTokensOut).toBeGreaterThan(0);
    expect(graft.body.cost.gpuTokensOut).toBeLessThanOrEqual(4);
    expect(graft.body.hashes.outputSha256).toMatch(/^[0-9a-f]{64}$/);

    // deleting the block removes it from routing
    const del = await api("DELETE", `/admin/blocks/${blockId}`);
    expect(del.status).toBe(200);
    expect(del.body.block.state).toBe("quarantined");
    const after = await api("POST", "/v1/solve", {
      problem: "A crate holds 12 rows of 30 jars. How many jars are in the crate?",
      mode: "library",
    });
    expect(after.body).toMatchObject({ source: "none", route: { reason: "mode_library_only" } });
  });

  it("registers a block that reached the GPU node without the edge (POST /admin/blocks)", async () => {
    const gpu = createGpuClient({ baseUrl: run.summary.gpuUrl, secret: GPU_SECRET, timeoutMs: 60_000 });
    const manifest = await gpu.deposit("Problem:\nWhat is 40 plus 2?\n\nAnswer: 42\n");
    const lib = await api("GET", "/v1/library?limit=1");
    const problemId = lib.body.items[0].id as string;
    const registered = await api("POST", "/admin/blocks", { problemId, sha256: manifest.sha256 });
    expect(registered.status).toBe(201);
    expect(registered.body.block).toMatchObject({ sha256: manifest.sha256, problemId, state: "ready" });
    const unknown = await api("POST", "/admin/blocks", { problemId, sha256: "e".repeat(64) });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("block_not_found");
  });

  it("admin deposit rejects programs whose output differs, that crash or that run too long", async () => {
    const base = { problem: "What is 6 plus 7?", solution: "6 + 7 = 13." };
    const wrong = await api("POST", "/admin/solutions", {
      ...base,
      program: "a, b = PARAMS\nprint(a + b + 1)",
      answer: "13",
    });
    expect(wrong.status).toBe(422);
    expect(wrong.body.error).toMatchObject({
      code: "program_mismatch",
      details: { expected: "13", got: "14" },
    });
    const crash = await api("POST", "/admin/solutions", {
      ...base,
      program: "raise SystemExit(3)",
      answer: "13",
    });
    expect(crash.status).toBe(422);
    expect(crash.body.error.code).toBe("program_error");
    const loop = await api("POST", "/admin/solutions", {
      ...base,
      program: "while True:\n    pass\n",
      answer: "13",
    });
    expect(loop.status).toBe(422);
    expect(loop.body.error.code).toBe("program_timeout");
    const lib = await api("GET", "/v1/library?limit=100");
    expect(lib.body.items.some((i: Json) => i.problem.includes("6 plus 7"))).toBe(false);
  }, 120_000);

  it("no library match: the plain model answers within the token budget", async () => {
    const r = await api("POST", "/v1/solve", {
      problem: "Name a prime larger than one hundred.",
      maxTokens: 3,
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      source: "model",
      verified: false,
      route: { decision: "abstain" },
    });
    expect(r.body.cost.gpuTokensIn).toBeGreaterThan(0);
    expect(r.body.cost.gpuTokensOut).toBeGreaterThan(0);
    expect(r.body.cost.gpuTokensOut).toBeLessThanOrEqual(3);
  });

  it(
    "stops cleanly on SIGTERM and restarts without redepositing",
    async () => {
      expect(await stop(run.child, "SIGTERM")).toBe(0);
      await expect(fetch(`${url}/health`)).rejects.toThrow();
      run = await startKvgraft(dataDir);
      expect(run.summary).toMatchObject({
        adminKey: null,
        starter: { deposited: 0, present: 12, failed: [] },
      });
      url = run.summary.edgeUrl;
      const r = await api("POST", "/v1/solve", {
        problem:
          "Sam buys 12 apples at $0.75 each and pays with a $20 bill. How much change does he get, in dollars?",
      });
      expect(r.body).toMatchObject({ source: "library", answer: "11" });
      expect(await stop(run.child, "SIGINT")).toBe(0);
    },
    START_TIMEOUT_MS,
  );
});
