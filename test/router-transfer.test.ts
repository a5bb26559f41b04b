/**
 * Parametric programs and the routes of /v1/solve through a real edge (Node entry, libSQL file
 * database) and a loopback GPU node whose /v1/sandbox/run is the real sandbox and whose /v1/graft
 * answers a fixed generation (and /v1/blocks a manifest for deposits), recording every request.
 * The parametric flag and the parameter profile are what the deposit check (`profileParameters`,
 * real sandbox) decides. Last,
 * `kvgraft eval router --edge` against that edge.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localProgramRunner, wilson95 } from "../cli/commands/eval.js";
import type { GpuPool } from "../edge/cluster/gpu-pool.js";
import { addSolution, registerBlock, registerProblem } from "../edge/db/library.js";
import { queries as queryLog } from "../edge/db/schema.js";
import { isParametricProfile, profileParameters } from "../edge/routing/param-probe.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { silentLogger } from "../shared/http/logger.js";
import { normalizeProblem, problemFingerprint, problemTemplate } from "../shared/normalize.js";
import { gpuPaths } from "../shared/protocol.js";
import { manifestFor } from "./helpers/loopback-gpu.js";

const SECRET = "router-test-secret-0123456789abcdef";
const APPLES =
  "Sam buys 12 apples at $0.75 each and pays with a $20 bill. How much change does he get, in dollars?";
const PARAMETRIC = [
  "def fmt(x):",
  "    x = round(x, 2)",
  "    return str(int(x)) if x == int(x) else str(x)",
  "",
  "count, price, paid = PARAMS",
  "print(fmt(paid - count * price))",
  "",
].join("\n");
/** Reads PARAMS but prints the original answer whatever the numbers. */
const HARD_CODED = "count, price, paid = PARAMS\nprint(20 - 12 * 0.75)\n";

const WORK = new Set<string>([gpuPaths.graft, gpuPaths.sandboxRun, gpuPaths.generate, gpuPaths.solve]);

let runner: Pick<GpuPool, "runProgram">;
let gpu: Server;
const requests: string[] = [];
let dir: string;
let edge: EdgeServer;
let adminKey: string;

// Every test here runs programs in the real sandbox.

beforeAll(async () => {
  runner = await localProgramRunner();
  gpu = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", async () => {
      // Health checks and block listings come and go with the edge's node pool: only work counts.
      if (WORK.has(req.url ?? "")) requests.push(req.url ?? "");
      const send = (status: number, value: unknown) =>
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
      if (req.url === gpuPaths.sandboxRun) {
        const { program, params, expect } = JSON.parse(body);
        return send(200, await runner.runProgram({ program, params, expect }));
      }
      if (req.url === gpuPaths.blocks && req.method === "POST") {
        // A deposit: a manifest for the text, as the node reports it (no model here).
        const { text } = JSON.parse(body);
        return send(200, await manifestFor(text));
      }
      if (req.url === gpuPaths.graft) {
        const { blockId } = JSON.parse(body);
        return send(200, {
          text: "grafted\n42",
          tokens: [7, 8],
          outputSha256: "e".repeat(64),
          blockSha256: blockId,
          tier: "hot",
          tokensIn: 5,
          tokensOut: 2,
          timings: { restoreMs: 0.1, queryMs: 1, decodeMs: 1, totalMs: 2.1 },
          finishReason: "maxTokens",
        });
      }
      send(404, { error: { code: "not_found", message: "not here" } });
    });
  });
  await new Promise<void>((r) => gpu.listen(0, "127.0.0.1", r));
  dir = mkdtempSync(join(tmpdir(), "kvgraft-router-transfer-"));
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: `http://127.0.0.1:${(gpu.address() as AddressInfo).port}`,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_RATE_LIMIT: "10000",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  adminKey = edge.generatedAdminKey as string;
}, 60_000);

afterAll(async () => {
  await edge?.close();
  gpu?.closeAllConnections();
  await new Promise((r) => gpu?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** Registers the problem as a deposit does, the parametric flag from the real deposit check. */
async function deposit(problem: string, program: string, answer: string, blockSha: string) {
  const normalizedText = normalizeProblem(problem);
  const { template, params, literals } = problemTemplate(normalizedText);
  const paramProfile = await profileParameters(runner, program, literals, answer);
  const parametric = isParametricProfile(paramProfile);
  const { problem: row } = await registerProblem(edge.db, {
    normalizedText,
    fingerprint: await problemFingerprint(problem),
    template,
    params,
  });
  await addSolution(edge.db, {
    problemId: row.id,
    worked: "worked",
    program,
    answer,
    parametric,
    verified: true,
    verification: { method: "test", paramProfile },
  });
  const fp = { sha256: "f".repeat(64) };
  await registerBlock(edge.db, {
    sha256: blockSha,
    problemId: row.id,
    manifest: {
      tokenCount: 9,
      tokensSha256: "1".repeat(64),
      textSha256: "2".repeat(64),
      modelFingerprint: fp,
      engineFingerprint: fp,
    },
    state: "ready",
    nodeId: null,
  });
  return { id: row.id, parametric };
}

async function solve(problem: string, mode = "auto") {
  const before = requests.length;
  const res = await fetch(`${edge.url}/v1/solve`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ problem, mode, maxTokens: 4 }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: checked by the assertions
  const body = (await res.json()) as Record<string, any>;
  return { status: res.status, body, gpu: requests.slice(before) };
}

describe("parametric check at deposit", () => {
  it("a program that computes from PARAMS is parametric; hard-coded constants are not", async () => {
    const { literals } = problemTemplate(APPLES);
    const parametric = async (program: string) =>
      isParametricProfile(await profileParameters(runner, program, literals, "11"));
    expect(await parametric(PARAMETRIC)).toBe(true);
    expect(await parametric(HARD_CODED)).toBe(false);
    // No PARAMS at all.
    expect(await parametric("print(11)")).toBe(false);
    // A program that checks a number reads it: it fails on another one, so that number is `read`.
    const fragile = "count, price, paid = PARAMS\nassert count == 12\nprint(paid - count * price)\n";
    const profile = await profileParameters(runner, fragile, literals, "11");
    expect(profile.params.map((p) => [p.literal, p.kind, p.sign, p.role])).toEqual([
      ["12", "integer", "positive", "read"],
      ["0.75", "decimal", "positive", "read"],
      ["20", "integer", "positive", "read"],
    ]);
    // The exponent of this quadratic's program is not read: it must keep its value in a transfer.
    const quadratic = "_, b, c, rhs = PARAMS\nprint(max((b + (b * b - 4 * (c - rhs)) ** 0.5) / 2, 0))\n";
    const q = await profileParameters(runner, quadratic, ["2", "5", "6", "0"], "3.0");
    expect(q.params.map((p) => p.role)).toEqual(["ignored", "read", "read", "read"]);
  });
});

describe("routes through /v1/solve", () => {
  it("non-parametric: new numbers graft the block, never transfer", async () => {
    const stored = await deposit(APPLES, HARD_CODED, "11", "a".repeat(64));
    expect(stored.parametric).toBe(false);
    const r = await solve(
      "Sam buys 7 apples at $1.25 each and pays with a $50 bill. How much change does he get, in dollars?",
    );
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      source: "graft",
      route: {
        decision: "template",
        reason: "template_graft",
        problemId: stored.id,
        blockId: "a".repeat(64),
      },
    });
    expect(r.gpu).toEqual([gpuPaths.graft]);
  });

  it("parametric: new numbers run the program on them (transfer, no model tokens)", async () => {
    const problem =
      // $1.25, not $1.50: a number written with a trailing zero stays as written in the template
      // (shared/normalize), so $1.50 and $2.25 would be two templates.
      "Ann buys 4 pens at $1.25 each and pays with a $10 bill. How much change does she get, in dollars?";
    const stored = await deposit(problem, PARAMETRIC, "5", "b".repeat(64));
    expect(stored.parametric).toBe(true);
    const r = await solve(
      "Ann buys 3 pens at $2.25 each and pays with a $20 bill. How much change does she get, in dollars?",
    );
    expect(r.body).toMatchObject({
      source: "transfer",
      answer: "13.25",
      text: null,
      verified: true,
      verification: { method: "program_transfer", params: "kind_sign_and_role_match", answerCheck: null },
      transferRefused: null,
      route: { decision: "template", reason: "template_transfer", problemId: stored.id },
      cost: { gpuTokensIn: 0, gpuTokensOut: 0 },
    });
    expect(r.gpu).toEqual([gpuPaths.sandboxRun]);
  });

  it("a reworded problem grafts its block (similar), even with a parametric program", async () => {
    const r = await solve(
      "If Ann pays for 4 pens costing $1.25 apiece using a $10 bill, what change should she receive?",
    );
    expect(r.body).toMatchObject({
      source: "graft",
      route: { decision: "similar", reason: "similar", blockId: "b".repeat(64) },
    });
    expect(r.body.route.score).toBeGreaterThan(0);
    expect(r.gpu).toEqual([gpuPaths.graft]);
  });

  it("abstains on a near miss; the decision, score and reason are logged", async () => {
    const r = await solve(
      "Sam buys 12 apples at $0.75 each. How much do the apples cost in total, in dollars?",
      "library",
    );
    expect(r.body).toMatchObject({ source: "none", route: { decision: "abstain" } });
    expect(r.gpu).toEqual([]);
    const logged = await edge.db.select().from(queryLog);
    const similar = logged.find((q) => q.route.decision === "similar");
    expect(similar?.route).toMatchObject({
      reason: "similar",
      score: expect.any(Number),
      runnerUp: expect.any(Number),
    });
  });
});

/** `kvgraft <args>` in a child process without blocking this one; JSON is the last stdout line. */
function cliAsync(args: string[]): Promise<{ status: number | null; stderr: string; json: unknown }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(import.meta.dirname, "..", "cli", "main.ts"), ...args],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c) => {
    stdout += c;
  });
  child.stderr.on("data", (c) => {
    stderr += c;
  });
  return new Promise((resolve) =>
    child.on("close", (status) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout.trim().split("\n").at(-1) ?? "");
      } catch {
        json = undefined;
      }
      resolve({ status, stderr, json });
    }),
  );
}

describe("kvgraft eval router --edge", () => {
  it("deposits the library through the admin API and routes the queries through /v1/solve", async () => {
    const ids = new Set(["hypotenuse", "gcd"]);
    const lines = (name: string) =>
      readFileSync(join(import.meta.dirname, "fixtures", name), "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "");
    const library = lines("router-library.jsonl").filter((l) => ids.has(JSON.parse(l).id));
    const queries = lines("router-queries.jsonl").filter((l) => {
      const q = JSON.parse(l);
      return ids.has(q.expect) || (q.expect === null && /common multiple|lined up|capital/.test(q.query));
    });
    writeFileSync(join(dir, "lib.jsonl"), `${library.join("\n")}\n`);
    writeFileSync(join(dir, "q.jsonl"), `${queries.join("\n")}\n`);
    const before = requests.length;
    // The edge runs in this process: the CLI must run beside it, not block it (spawnSync).
    const r = await cliAsync([
      "eval",
      "router",
      "--library",
      join(dir, "lib.jsonl"),
      "--queries",
      join(dir, "q.jsonl"),
      "--edge",
      edge.url,
      "--admin-key",
      adminKey,
      "--json",
    ]);
    expect(r.status, r.stderr).toBe(0);
    const inLibrary = queries.filter((l) => JSON.parse(l).expect !== null).length;
    const outOfLibrary = queries.length - inLibrary;
    expect(r.json).toEqual({
      inLibrary: { n: inLibrary, correct: inLibrary, wilson95: wilson95(inLibrary, inLibrary) },
      outOfLibrary: {
        n: outOfLibrary,
        abstained: outOfLibrary,
        wilson95: wilson95(outOfLibrary, outOfLibrary),
      },
      wrongRoutes: 0,
      transfer: { n: 2, correct: 2 },
      p50RouteMs: expect.any(Number),
    });
    // Paraphrases grafted the deposited blocks; new numbers ran the programs (transfer).
    expect(requests.slice(before)).toContain(gpuPaths.graft);
  }, 60_000);
});
