/**
 * Issue 24 through a real edge (Node entry, libSQL file) and a loopback GPU node whose sandbox is
 * the real one: problems are deposited through POST /admin/solutions (program checked, parameters
 * profiled), then asked through /v1/solve. Every case of the issue, with its expected result:
 * no merged problems on the fast path, transfers only for numbers in their deposit role and kind,
 * exact integers of any size, and a response that says what was verified and how.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { desc } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addSolution } from "../edge/db/library.js";
import { problems, queries } from "../edge/db/schema.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { sha256Hex } from "../shared/hash.js";
import { silentLogger } from "../shared/http/logger.js";
import { gpuPaths } from "../shared/protocol.js";
import { type LoopbackGpu, startLoopbackGpu } from "./helpers/loopback-gpu.js";

const SECRET = "transfer-roles-secret-0123456789abcdef";

interface Entry {
  id: string;
  problem: string;
  solution: string;
  program: string;
  answer: string;
}
const starter = new Map(
  readFileSync(join(import.meta.dirname, "..", "edge", "starter-library.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Entry)
    .map((e) => [e.id, e]),
);
const entry = (id: string) => starter.get(id) as Entry;

let gpu: LoopbackGpu;
let dir: string;
let edge: EdgeServer;
let adminKey: string;

// biome-ignore lint/suspicious/noExplicitAny: checked by the assertions
async function post(path: string, body: unknown): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${edge.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function deposit(e: Omit<Entry, "id"> & { id?: string }) {
  const { id: _, ...body } = e;
  const r = await post("/admin/solutions", body);
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body;
}

async function solve(problem: string, mode = "library") {
  const before = gpu.requests.length;
  const r = await post("/v1/solve", { problem, mode, maxTokens: 4 });
  return { ...r, gpu: gpu.requests.slice(before) };
}

// Every test here deposits and transfers through the real sandbox.

beforeAll(async () => {
  gpu = await startLoopbackGpu();
  dir = mkdtempSync(join(tmpdir(), "kvgraft-transfer-roles-"));
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: gpu.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_RATE_LIMIT: "10000",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  adminKey = edge.generatedAdminKey as string;
  for (const id of ["change-apples", "gcd", "power-mod", "quadratic-larger-root"]) await deposit(entry(id));
}, 180_000);

afterAll(async () => {
  await edge?.close();
  await gpu?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("deposit profiles the parameters", () => {
  it("marks the quadratic's exponent ignored and stores exact literals", async () => {
    const r = await deposit(entry("quadratic-larger-root"));
    expect(r.problem.params).toEqual(["2", "5", "6", "0"]);
    const profile = r.solution.verification.paramProfile;
    expect(profile.params.map((p: { role: string }) => p.role)).toEqual(["ignored", "read", "read", "read"]);
    expect(profile.params.map((p: { sign: string }) => p.sign)).toEqual([
      "positive",
      "positive",
      "positive",
      "zero",
    ]);
  });
});

describe("issue 24, case 1: normalization never merges problems that differ", () => {
  it("3¾ hours is not 33/4 hours", async () => {
    await deposit({
      problem: "What is 33/4 hours in minutes?",
      solution: "33/4 h = 8.25 h = 495 min.",
      program: "a, b = PARAMS\nprint(int(a * 60 / b))\n",
      answer: "495",
    });
    expect((await solve("What is 33/4 hours in minutes?")).body).toMatchObject({
      source: "library",
      answer: "495",
    });
    const r = await solve("What is 3¾ hours in minutes?");
    expect(r.body.source).not.toBe("library");
    expect(r.body.verified).toBe(false);
    expect(r.body.answer).not.toBe("495");
  });

  it("A and a are two variables", async () => {
    await deposit({
      problem: "Let A = 5 and a = 3. What is A?",
      solution: "A is 5.",
      program: "A, a = PARAMS\nprint(A)\n",
      answer: "5",
    });
    const r = await solve("Let a = 5 and A = 3. What is A?");
    expect(r.body.source).not.toBe("library");
    expect(r.body.verified).toBe(false);
  });
});

describe("issue 24, case 2: normalization is a fixed point", () => {
  it("the library's own normalizedText is the same problem", async () => {
    const stored = await deposit(entry("change-apples"));
    const r = await solve(stored.problem.normalizedText, "verified");
    expect(r.body).toMatchObject({
      source: "library",
      verified: true,
      answer: "11",
      verification: { method: "library_answer", params: "same_problem" },
      route: { problemId: stored.problem.id },
    });
    expect(r.gpu).toEqual([]);
  });
});

describe("issue 24, case 3: transfers only for numbers in their deposit role", () => {
  it.each([
    ["Find the larger root of the equation x^3 - 5x + 6 = 0.", "param_not_modelled", 0],
    ["Find the larger root of the equation x^1 - 5x + 6 = 0.", "param_not_modelled", 0],
    ["Find the larger root of the equation x^2 - 5x + 6 = -2.", "param_sign", 3],
    ["What is the greatest common divisor of 84 and 126.5?", "param_kind", 1],
    ["What is the greatest common divisor of 84 and -126?", "param_sign", 1],
  ])("%j is not a transfer (%s)", async (problem, code, param) => {
    const r = await solve(problem);
    expect(r.body).toMatchObject({
      source: "graft",
      verified: false,
      verification: null,
      transferRefused: { code, param },
      route: { decision: "template", reason: "template_graft" },
    });
    expect(r.gpu).toEqual([gpuPaths.graft]);
    const [logged] = await edge.db.select().from(queries).orderBy(desc(queries.id)).limit(1);
    expect(logged?.route).toMatchObject({ transferRefused: code });
  });

  it.each([
    ["Find the larger root of the equation x^2 - 7x + 12 = 0.", "4", "root_substituted"],
    ["Find the larger root of the equation x^2 - 5x + 5 = 0.", "3.62", "root_substituted"],
    ["What is the greatest common divisor of 84 and 98?", "14", "gcd_checked"],
    [
      "Sam buys 12 apples at $1 each and pays with a $20 bill. How much change does he get, in dollars?",
      "8",
      null,
    ],
  ])("%j is a verified transfer: %s (%s)", async (problem, answer, answerCheck) => {
    const r = await solve(problem);
    expect(r.body).toMatchObject({
      source: "transfer",
      answer,
      text: null,
      verified: true,
      verification: { method: "program_transfer", params: "kind_sign_and_role_match", answerCheck },
      transferRefused: null,
      cost: { gpuTokensIn: 0, gpuTokensOut: 0 },
    });
    expect(r.gpu).toEqual([gpuPaths.sandboxRun]);
  });

  it("a wrong answer from a verified program fails its check and is not a transfer", async () => {
    // Its program answers the smaller root: right on the deposit's own numbers only by the check.
    await deposit({
      problem: "Find the larger root of the equation y^2 - 3y + 0 = 0.",
      solution: "y(y - 3) = 0: the larger root is 3.",
      program:
        "_, b, c, rhs = PARAMS\nd = (b * b - 4 * (c - rhs)) ** 0.5\nprint(round((b - d) / 2 + (3 if b == 3 else 0)))\n",
      answer: "3",
    });
    const r = await solve("Find the larger root of the equation y^2 - 7y + 0 = 0.");
    expect(r.body).toMatchObject({
      source: "graft",
      verified: false,
      transferRefused: { code: "answer_check_failed" },
    });
  });
});

describe("issue 24, case 4: integers of any size are exact", () => {
  it("7^100 mod 12345678901234567891 is 9129465793113485109", async () => {
    const r = await solve("What is the remainder when 7^100 is divided by 12345678901234567891?");
    expect(r.body).toMatchObject({
      source: "transfer",
      answer: "9129465793113485109",
      verified: true,
      verification: { answerCheck: "power_mod_recomputed" },
    });
  });

  it("a gcd of two 400-digit numbers goes through PARAMS exactly", async () => {
    const g = 10n ** 150n + 7n;
    const a = g * (10n ** 249n + 3n);
    const b = g * (10n ** 249n + 4n);
    expect(a.toString()).toHaveLength(400);
    const r = await solve(`What is the greatest common divisor of ${a} and ${b}?`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ source: "transfer", answer: g.toString(), verified: true });
  });

  it("a number longer than 1,000 digits is no transfer (solve) and a 400 number_too_long (deposit)", async () => {
    const huge = `9${"0".repeat(1200)}`;
    const r = await solve(`What is the greatest common divisor of ${huge} and 6?`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ verified: false, transferRefused: { code: "param_too_long", param: 0 } });
    const d = await post("/admin/solutions", {
      problem: `What is ${huge} plus 1?`,
      solution: "Add one.",
      program: "a, b = PARAMS\nprint(len(str(a + b)))\n",
      answer: "1201",
    });
    expect(d.status).toBe(400);
    expect(d.body.error).toMatchObject({ code: "number_too_long" });
  });
});

describe("issue 23: deeply nested LaTeX", () => {
  it("9,000 nested braces are a 400 problem_too_nested, on /v1/solve and on a deposit", async () => {
    const problem = `What is ${"{".repeat(9000)}2${"}".repeat(9000)}?`;
    const solved = await solve(problem);
    expect(solved.status).toBe(400);
    expect(solved.body.error).toMatchObject({ code: "problem_too_nested" });
    expect(solved.gpu).toEqual([]);
    const deposited = await post("/admin/solutions", {
      problem,
      solution: "2",
      program: "print(2)",
      answer: "2",
    });
    expect(deposited.status).toBe(400);
    expect(deposited.body.error).toMatchObject({ code: "problem_too_nested" });
  });
});

describe("rows of an older normalization", () => {
  it("never answer, and a new deposit brings them up to date", async () => {
    // What version 1 stored for "What is 5½ hours in minutes?" (½ read as a digit run, 51/2), in
    // this version's letter case, so that a deposit of "What is 51/2 hours in minutes?" finds it.
    const oldText = "What is 51/2 hours in minutes";
    const [row] = await edge.db
      .insert(problems)
      .values({
        id: "prb_0000000000000000000000001",
        normalizedText: oldText,
        fingerprint: await sha256Hex(oldText),
        template: "What is #/# hours in minutes",
        params: [51, 2],
        normalizeVersion: 1,
      })
      .returning();
    await addSolution(edge.db, {
      problemId: row?.id as string,
      worked: "5.5 h = 330 min",
      program: "print(330)",
      answer: "330",
      parametric: false,
      verified: true,
      verification: { method: "sandbox" },
    });
    const asked = await solve("What is 51/2 hours in minutes?");
    expect(asked.body.source).not.toBe("library");
    expect(asked.body.answer).not.toBe("330");

    const stored = await deposit({
      problem: "What is 51/2 hours in minutes?",
      solution: "51/2 h = 25.5 h = 1530 min.",
      program: "a, b = PARAMS\nprint(a * 60 // b)\n",
      answer: "1530",
    });
    expect(stored.problem).toMatchObject({ id: row?.id, params: ["51", "2"] });
    expect((await solve("What is 51/2 hours in minutes?")).body).toMatchObject({
      source: "library",
      verified: true,
      answer: "1530",
    });
  });
});

describe("issue 18, item 4: a transfer returns the parsed answer, never the program's output", () => {
  it("other printed lines stay in the sandbox, and a last line that is not a plain number is refused", async () => {
    await deposit({
      problem: "What is 2 plus 3?",
      solution: "2 + 3 = 5.",
      program: 'a, b = PARAMS\nprint("SECRET-LINE-1")\nprint(a + b if a < 10 else "SECRET-ANSWER-2")\n',
      answer: "5",
    });
    const ok = await solve("What is 4 plus 5?");
    expect(ok.body).toMatchObject({ source: "transfer", answer: "9", text: null, verified: true });
    expect(JSON.stringify(ok.body)).not.toContain("SECRET");
    const refused = await solve("What is 12 plus 3?");
    expect(refused.body).toMatchObject({
      source: "graft",
      verified: false,
      transferRefused: { code: "answer_not_plain" },
    });
    expect(JSON.stringify(refused.body)).not.toContain("SECRET");
  });
});
