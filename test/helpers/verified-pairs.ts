/**
 * The meaning-changing pairs of issue 35 (test/fixtures/verified-pairs*.jsonl) through a real edge
 * (Node entry, libSQL file) and a loopback GPU node whose sandbox is the real one: each pair's
 * problem is deposited through POST /admin/solutions (program checked, parameters profiled), then
 * its query asked through /v1/solve in mode `library` (no sampled model), and the response is
 * compared with the pair's expected outcome.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { type EdgeServer, startEdgeServer } from "../../edge/runtime/node.js";
import { silentLogger } from "../../shared/http/logger.js";
import { type LoopbackGpu, startLoopbackGpu } from "./loopback-gpu.js";

const SECRET = "verified-pairs-secret-0123456789abcdef";

/** A problem as the admin API takes it. */
export interface Deposit {
  problem: string;
  solution: string;
  program: string;
  answer: string;
}

/** What a query must get: no verified answer, a verified one, or a transfer refused with a code. */
export type Expected =
  | { outcome: "not_verified" }
  | { outcome: "library"; answer: string }
  | { outcome: "transfer"; answer: string }
  | { outcome: "refused"; code: string };

/** One pair: the deposited problem (or a starter library entry), the query, what it must get. */
export interface Pair {
  id: string;
  kind: string;
  deposit: Deposit | { starter: string };
  query: string;
  expect: Expected;
  why: string;
}

const root = join(import.meta.dirname, "..", "..");

function jsonl<T>(path: string): T[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
}

/** The pairs of one fixture file (under test/fixtures). */
export function readPairs(file: string): Pair[] {
  return jsonl<Pair>(join(root, "test", "fixtures", file));
}

const starter = new Map(
  jsonl<Deposit & { id: string }>(join(root, "edge", "starter-library.jsonl")).map((e) => [e.id, e]),
);

/** The problem a pair deposits. */
export function depositOf(pair: Pair): Deposit {
  if ("starter" in pair.deposit) {
    const entry = starter.get(pair.deposit.starter);
    if (!entry) throw new Error(`no starter entry ${pair.deposit.starter}`);
    const { id: _, ...body } = entry;
    return body;
  }
  return pair.deposit;
}

// biome-ignore lint/suspicious/noExplicitAny: checked by the assertions
export type Body = Record<string, any>;

export interface PairsEdge {
  edge: EdgeServer;
  gpu: LoopbackGpu;
  adminKey: string;
  post(path: string, body: unknown): Promise<{ status: number; body: Body }>;
  close(): Promise<void>;
}

/** Starts the edge and its loopback node and deposits every pair's problem (each once). */
export async function startPairsEdge(pairs: Pair[]): Promise<PairsEdge> {
  const gpu = await startLoopbackGpu();
  const dir = mkdtempSync(join(tmpdir(), "kvgraft-verified-pairs-"));
  const edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: gpu.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_RATE_LIMIT: "100000",
      KVGRAFT_FLYWHEEL: "off",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  const adminKey = edge.generatedAdminKey as string;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${edge.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Body };
  };
  const deposited = new Set<string>();
  for (const pair of pairs) {
    const d = depositOf(pair);
    if (deposited.has(d.problem)) continue;
    deposited.add(d.problem);
    const r = await post("/admin/solutions", d);
    if (r.status >= 300)
      throw new Error(`deposit of ${pair.id} failed: ${r.status} ${JSON.stringify(r.body)}`);
  }
  return {
    edge,
    gpu,
    adminKey,
    post,
    async close() {
      await edge.close();
      await gpu.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Asks the pair's query (mode `library`) and checks the response against its expected outcome. */
export async function checkPair(edge: PairsEdge, pair: Pair): Promise<void> {
  const r = await edge.post("/v1/solve", { problem: pair.query, mode: "library", maxTokens: 4 });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const seen = JSON.stringify({
    source: r.body.source,
    answer: r.body.answer,
    verified: r.body.verified,
    route: r.body.route,
    transferRefused: r.body.transferRefused,
  });
  const e = pair.expect;
  switch (e.outcome) {
    case "not_verified":
      expect(r.body.verified, `${pair.why}: ${seen}`).toBe(false);
      expect(["library", "transfer"], seen).not.toContain(r.body.source);
      return;
    case "library":
    case "transfer":
      expect(r.body, seen).toMatchObject({ source: e.outcome, verified: true, answer: e.answer });
      return;
    case "refused":
      expect(r.body, `${pair.why}: ${seen}`).toMatchObject({
        verified: false,
        transferRefused: { code: e.code },
      });
      return;
  }
}
