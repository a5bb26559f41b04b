/**
 * `kvgraft bench sandbox`: verdict latency of the starter library's programs (edge/starter-library.jsonl,
 * each on its own problem's numbers) on a warm pool, per backend side by side, and the programs per
 * second a backend sustains with its pool kept busy. Latency is measured one program at a time after
 * the pool is warm (the WebAssembly backend's interpreters booted); throughput with `concurrency`
 * programs in flight, so it includes booting the interpreter each program then uses.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SandboxPool } from "../gpu-node/sandbox/pool.js";
import type { IsolationMode, ProgramJob, SandboxChoice } from "../gpu-node/sandbox/sandbox.js";
import { normalizeProblem, problemTemplate } from "../shared/normalize.js";

/** The starter library's programs as jobs: each on its problem's numbers, expecting its answer. */
export function starterJobs(): { id: string; job: ProgramJob }[] {
  const file = join(import.meta.dirname, "..", "edge", "starter-library.jsonl");
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const e = JSON.parse(line) as { id: string; problem: string; program: string; answer: string };
      const { literals } = problemTemplate(normalizeProblem(e.problem));
      return { id: e.id, job: { source: e.program, params: literals, expect: e.answer } };
    });
}

export interface SandboxBenchRow {
  backend: IsolationMode;
  /** Time to create the pool (snapshot, first interpreters, probe), ms. */
  startMs: number;
  runs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Programs per second with `concurrency` in flight for `sustainS` seconds. */
  programsPerS: number;
  /** Verdicts that were not `ok` (each program must pass). */
  failures: number;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
const round1 = (x: number) => Math.round(x * 10) / 10;

/** Benchmarks each backend in turn with the same jobs. */
export async function benchSandbox(options: {
  backends: SandboxChoice[];
  rounds: number;
  concurrency: number;
  sustainS: number;
  log?: (line: string) => void;
}): Promise<SandboxBenchRow[]> {
  const jobs = starterJobs();
  const rows: SandboxBenchRow[] = [];
  for (const backend of options.backends) {
    const t0 = performance.now();
    const pool = await SandboxPool.create({ backend, concurrency: options.concurrency, maxQueued: 1024 });
    const startMs = Math.round(performance.now() - t0);
    try {
      let failures = 0;
      const latencies: number[] = [];
      for (let round = 0; round < options.rounds; round++)
        for (const { job } of jobs) {
          // Latency on a warm pool: the interpreters the last program used up have booted again.
          await pool.warmed();
          const t = performance.now();
          const r = await pool.runProgram(job);
          latencies.push(performance.now() - t);
          if (r.verdict !== "ok") failures++;
        }
      latencies.sort((a, b) => a - b);
      options.log?.(
        `${pool.isolation}: ${latencies.length} runs, p50 ${round1(quantile(latencies, 0.5))} ms`,
      );
      let done = 0;
      const until = performance.now() + options.sustainS * 1000;
      const t1 = performance.now();
      await Promise.all(
        Array.from({ length: options.concurrency }, async (_, worker) => {
          for (let i = worker; performance.now() < until; i += options.concurrency) {
            const r = await pool.runProgram((jobs[i % jobs.length] as { job: ProgramJob }).job);
            if (r.verdict !== "ok") failures++;
            done++;
          }
        }),
      );
      const programsPerS = done / ((performance.now() - t1) / 1000);
      rows.push({
        backend: pool.isolation,
        startMs,
        runs: latencies.length,
        p50Ms: round1(quantile(latencies, 0.5)),
        p99Ms: round1(quantile(latencies, 0.99)),
        maxMs: round1(latencies.at(-1) ?? 0),
        programsPerS: round1(programsPerS),
        failures,
      });
    } finally {
      pool.close();
    }
  }
  return rows;
}

/** The rows as a Markdown table. */
export function sandboxBenchTable(rows: SandboxBenchRow[]): string {
  const lines = [
    "| backend | start (ms) | runs | p50 (ms) | p99 (ms) | max (ms) | sustained (programs/s) | not ok |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.backend} | ${r.startMs} | ${r.runs} | ${r.p50Ms} | ${r.p99Ms} | ${r.maxMs} | ${r.programsPerS} | ${r.failures} |`,
    ),
  ];
  return lines.join("\n");
}
