/**
 * Production and evaluation decide alike: every query of the tuning set and of the re-wording
 * development set is sent to POST /v1/solve of a real edge (Node entry, libSQL file database,
 * loopback GPU node that answers grafts and sampled solves), and the route it answers with (decision, problem, block)
 * is compared with `routeProblem` over the same database, the call `kvgraft eval router` and
 * `kvgraft bench router` make. The library has blocks on some problems only, and one template has
 * several problems, so the block choice is compared too.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addSolution, registerBlock, registerProblem } from "../edge/db/library.js";
import { libraryReader, routeProblem } from "../edge/routing/router.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { sha256Hex } from "../shared/hash.js";
import { silentLogger } from "../shared/http/logger.js";
import { normalizeProblem, problemTemplate } from "../shared/normalize.js";
import { type LoopbackGpu, startLoopbackGpu } from "./helpers/loopback-gpu.js";

const SECRET = "router-agreement-secret-0123456789ab";

const jsonl = <T>(name: string): T[] =>
  readFileSync(join(import.meta.dirname, "fixtures", name), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
const library = jsonl<{ id: string; problem: string; answer: string }>("router-library.jsonl");
const queries = [
  ...jsonl<{ query: string }>("router-queries.jsonl"),
  ...jsonl<{ query: string }>("router-dev-rewordings.jsonl"),
];

let gpu: LoopbackGpu;
let dir: string;
let edge: EdgeServer;
let adminKey: string;
/** The hypotenuse template's problems: [oldest (block), middle (block), newest (no block)]. */
const hypotenuse: { id: string; block: string | null }[] = [];

async function store(problem: string, answer: string, block: string | null) {
  const normalizedText = normalizeProblem(problem);
  const { template, params } = problemTemplate(normalizedText);
  const { problem: row } = await registerProblem(edge.db, {
    normalizedText,
    fingerprint: await sha256Hex(normalizedText),
    template,
    params,
  });
  await addSolution(edge.db, {
    problemId: row.id,
    worked: "worked",
    program: null,
    answer,
    parametric: false,
    verified: true,
    verification: { method: "test" },
  });
  if (block) {
    const fp = { sha256: "f".repeat(64) };
    await registerBlock(edge.db, {
      sha256: block,
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
  }
  return { id: row.id, block };
}

beforeAll(async () => {
  gpu = await startLoopbackGpu({ sandbox: false });
  dir = mkdtempSync(join(tmpdir(), "kvgraft-router-agreement-"));
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: gpu.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_RATE_LIMIT: "100000",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  adminKey = edge.generatedAdminKey as string;
  // Every other problem has a ready block, so routes with and without one are both compared.
  for (const [i, e] of library.entries()) {
    const stored = await store(e.problem, e.answer, i % 2 === 0 ? await sha256Hex(e.id) : null);
    if (e.id === "hypotenuse") hypotenuse.push(stored);
  }
  hypotenuse.push(
    await store(
      "A right triangle has legs of length 5 and 12. What is the length of the hypotenuse?",
      "13",
      "c".repeat(64),
    ),
    await store(
      "A right triangle has legs of length 8 and 15. What is the length of the hypotenuse?",
      "17",
      null,
    ),
  );
}, 60_000);

afterAll(async () => {
  await edge?.close();
  await gpu?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function solveRoute(problem: string) {
  const res = await fetch(`${edge.url}/v1/solve`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ problem, maxTokens: 4 }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as {
    route: { decision: string; problemId: string | null; blockId: string | null };
  };
  return body.route;
}

describe("/v1/solve and routeProblem agree", () => {
  it("on every tuning and development query: decision, problem and block", async () => {
    const reader = libraryReader(edge.db);
    const decisions = new Set<string>();
    for (const { query } of queries) {
      const served = await solveRoute(query);
      const decided = await routeProblem(reader, normalizeProblem(query));
      decisions.add(decided.decision);
      expect(
        { decision: served.decision, problemId: served.problemId, blockId: served.blockId },
        query,
      ).toEqual({
        decision: decided.decision,
        problemId: decided.problemId ?? null,
        blockId: decided.blockId ?? null,
      });
    }
    // Every kind of decision was compared.
    expect([...decisions].sort()).toEqual(["abstain", "answer", "similar", "template"]);
  }, 120_000);

  it("new numbers graft the newest block of the template's newest problem that has one", async () => {
    const [, withBlock] = hypotenuse;
    const query = "A right triangle has legs of length 20 and 21. What is the length of the hypotenuse?";
    const served = await solveRoute(query);
    expect(served).toMatchObject({
      decision: "template",
      problemId: withBlock?.id,
      blockId: withBlock?.block,
    });
    expect(await routeProblem(libraryReader(edge.db), normalizeProblem(query))).toMatchObject({
      decision: "template",
      problemId: withBlock?.id,
      blockId: withBlock?.block,
    });
  });
});
