/**
 * Measures the solve fast path over real HTTP on loopback: a Node edge with a fresh libSQL file
 * database holding one verified solution, and a loopback server standing in for the GPU node that
 * only counts requests (there must be none). Sequential requests after a warm-up; latency is the
 * client's round trip. Run it with `kvgraft bench fast-path [--requests 1000] [--warmup 100] [--json]`
 * (npm run bench:fast-path).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addSolution, registerProblem } from "../edge/db/library.js";
import { startEdgeServer } from "../edge/runtime/node.js";
import { normalizeProblem, problemFingerprint, problemTemplate } from "../shared/normalize.js";

/** What one fast-path run measured. */
export interface FastPathResult {
  requests: number;
  warmup: number;
  roundTripMs: { p50: number; p99: number; max: number };
  edgeMs: { p50: number; p99: number };
  requestsPerS: number;
  /** Requests that reached the stand-in GPU node (the fast path makes none). */
  gpuRequests: number;
  node: string;
}

/** Runs `warmup` unmeasured, then `requests` measured sequential fast-path solves. */
export async function benchFastPath(options: { requests: number; warmup: number }): Promise<FastPathResult> {
  const { requests, warmup } = options;
  let gpuRequests = 0;
  const gpu = createServer((_req, res) => {
    gpuRequests++;
    res.writeHead(500).end();
  });
  await new Promise<void>((r) => gpu.listen(0, "127.0.0.1", r));
  const dir = mkdtempSync(join(tmpdir(), "kvgraft-fast-path-"));
  const edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: `http://127.0.0.1:${(gpu.address() as AddressInfo).port}`,
      KVGRAFT_GPU_SECRET: "bench-secret-0123456789abcdef",
      KVGRAFT_RATE_LIMIT: String(requests + warmup + 10),
    },
    port: 0,
    host: "127.0.0.1",
  });
  try {
    const problem =
      "Sam buys 12 apples at $0.75 each and pays with a $20 bill. How much change does he get, in dollars?";
    const { template, params } = problemTemplate(problem);
    const { problem: row } = await registerProblem(edge.db, {
      normalizedText: normalizeProblem(problem),
      fingerprint: await problemFingerprint(problem),
      template,
      params,
    });
    await addSolution(edge.db, {
      problemId: row.id,
      worked: "12 × 0.75 = 9; 20 − 9 = 11.",
      program: null,
      answer: "11",
      parametric: false,
      verified: true,
      verification: { method: "bench" },
    });
    const init = {
      method: "POST",
      headers: { authorization: `Bearer ${edge.generatedAdminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ problem }),
    };
    const once = async () => {
      const t0 = performance.now();
      const res = await fetch(`${edge.url}/v1/solve`, init);
      const body = (await res.json()) as { source?: string; cost?: { edgeMs: number } };
      const ms = performance.now() - t0;
      if (res.status !== 200 || body.source !== "library")
        throw new Error(`unexpected answer: ${JSON.stringify(body)}`);
      return { ms, edgeMs: body.cost?.edgeMs ?? 0 };
    };
    for (let i = 0; i < warmup; i++) await once();
    const rtt: number[] = [];
    const server: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < requests; i++) {
      const r = await once();
      rtt.push(r.ms);
      server.push(r.edgeMs);
    }
    const wallS = (performance.now() - t0) / 1000;
    const q = (xs: number[], p: number) => {
      const s = [...xs].sort((a, b) => a - b);
      return Math.round((s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] ?? 0) * 1000) / 1000;
    };
    const result = {
      requests,
      warmup,
      roundTripMs: { p50: q(rtt, 0.5), p99: q(rtt, 0.99), max: q(rtt, 1) },
      edgeMs: { p50: q(server, 0.5), p99: q(server, 0.99) },
      requestsPerS: Math.round(requests / wallS),
      gpuRequests,
      node: process.version,
    };
    return result;
  } finally {
    await edge.close();
    gpu.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The result as the three lines `kvgraft bench fast-path` prints without --json. */
export function fastPathText(result: FastPathResult): string {
  return (
    `fast path over loopback, ${result.requests} sequential requests after ${result.warmup} warm-up:\n` +
    `  round trip p50 ${result.roundTripMs.p50} ms, p99 ${result.roundTripMs.p99} ms, max ${result.roundTripMs.max} ms\n` +
    `  edge-reported p50 ${result.edgeMs.p50} ms, p99 ${result.edgeMs.p99} ms; ${result.requestsPerS} req/s; GPU requests: ${result.gpuRequests}\n`
  );
}
