/**
 * The load generator behind `kvgraft bench edge` (bench/load-bench.ts), bounded for CI: a real
 * edge (libSQL file, one verified library answer) on loopback, the fast path at a constant rate;
 * then the same rate against a per-key limit of half of it, which must be shed with fast 429s
 * while the accepted half keeps its latency. Also the percentile arithmetic.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { percentiles, prepareWorkload, runLoad } from "../../bench/load-bench.js";
import { addSolution, registerProblem } from "../../edge/db/library.js";
import { type EdgeServer, startEdgeServer } from "../../edge/runtime/node.js";
import { silentLogger } from "../../shared/http/logger.js";
import { normalizeProblem, problemFingerprint, problemTemplate } from "../../shared/normalize.js";

const temp = mkdtempSync(join(tmpdir(), "kvgraft-rel-load-"));
const edges: EdgeServer[] = [];

afterAll(async () => {
  for (const e of edges) await e.close();
  rmSync(temp, { recursive: true, force: true });
});

async function edgeWithAnswer(name: string, env: Record<string, string>) {
  const edge = await startEdgeServer({
    env: { LIBSQL_URL: `file:${join(temp, `${name}.db`)}`, ...env },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  edges.push(edge);
  const problem = "What is 6 times 7?";
  const { template, params } = problemTemplate(normalizeProblem(problem));
  const { problem: row } = await registerProblem(edge.db, {
    normalizedText: normalizeProblem(problem),
    fingerprint: await problemFingerprint(problem),
    template,
    params,
  });
  await addSolution(edge.db, {
    problemId: row.id,
    worked: "6 × 7 = 42.",
    program: null,
    answer: "42",
    parametric: false,
    verified: true,
    verification: { method: "test" },
  });
  return { url: edge.url, key: edge.generatedAdminKey as string };
}

describe("percentiles", () => {
  it("uses nearest rank", () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentiles(values)).toEqual({ p50: 50, p95: 95, p99: 99, max: 100 });
    expect(percentiles([7])).toEqual({ p50: 7, p95: 7, p99: 7, max: 7 });
    expect(percentiles([])).toBeNull();
  });
});

describe("open-loop load through the edge", () => {
  it("sends on schedule and reports every answer of the fast path", async () => {
    const { url, key } = await edgeWithAnswer("fast", { KVGRAFT_RATE_LIMIT: "100000" });
    const { bodies, source } = await prepareWorkload(url, key, "fast", 4);
    expect(source).toBe("library");
    const t0 = performance.now();
    const r = await runLoad(
      { url, key, path: "fast", rate: 50, durationS: 2, timeoutMs: 5_000, maxTokens: 4 },
      bodies,
    );
    // Open loop: the sending window is the duration, whatever the answers do.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1_950);
    expect(r.offered).toBe(100);
    expect(r.ok).toBe(100);
    expect(r.statusCounts).toEqual({ "200": 100 });
    expect(r.sources).toEqual({ library: 100 });
    expect(r.errorRate).toBe(0);
    expect(r.throughputRps).toBe(50);
    expect(r.latencyMs?.p50).toBeGreaterThan(0);
    expect(r.latencyMs?.p99).toBeLessThan(1_000);
    expect(r.healthAfter.status).toBe(200);
  });

  it("counts load shed by a per-key limit as fast 429s, accepted requests unaffected", async () => {
    const { url, key } = await edgeWithAnswer("limited", {
      KVGRAFT_RATE_LIMIT: "20",
      KVGRAFT_RATE_PERIOD_S: "1",
    });
    const { bodies } = await prepareWorkload(url, key, "fast", 4);
    await new Promise((r) => setTimeout(r, 1_100)); // a fresh window
    const r = await runLoad(
      { url, key, path: "fast", rate: 40, durationS: 3, timeoutMs: 5_000, maxTokens: 4 },
      bodies,
    );
    expect(r.offered).toBe(120);
    expect(r.ok + (r.statusCounts["429"] ?? 0)).toBe(120);
    expect(r.codeCounts.rate_limited).toBeGreaterThanOrEqual(30);
    expect(r.ok).toBeGreaterThanOrEqual(40);
    expect(r.shedRate).toBeGreaterThan(0.25);
    expect(r.shedLatencyMs?.p99).toBeLessThan(1_000);
    expect(r.latencyMs?.p99).toBeLessThan(1_000);
  });
});
