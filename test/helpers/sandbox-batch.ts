/**
 * Many program runs through the product's sandbox (the default WebAssembly backend) in few jobs:
 * the runs of each program go in the deposit's batch job (edge/routing/program-batch.ts: one
 * driver runs the program once per parameter set, each as the sandbox would); a job that proves
 * nothing (a limit, a broken report) is replaced by one sandbox run per set. Tests that check
 * thousands of runs (the transfer fuzz, the fixtures) need no python3 on the host.
 */
import { type BatchRun, batchRuns, batchSource } from "../../edge/routing/program-batch.js";
import { DEFAULT_LIMITS } from "../../gpu-node/sandbox/limits.js";
import type { Sandbox } from "../../gpu-node/sandbox/sandbox.js";
import type { ProgramParam } from "../../shared/params.js";

export interface RunRequest {
  program: string;
  params: readonly ProgramParam[];
}

/** Numbers one batch job carries at most (the sandbox takes 10,000). */
const PARAMS_PER_JOB = 6000;

/** What each request printed, in order. */
export async function runAll(sandbox: Sandbox, requests: readonly RunRequest[]): Promise<BatchRun[]> {
  const groups = new Map<string, { program: string; arity: number; at: number[] }>();
  for (const [i, r] of requests.entries()) {
    const key = JSON.stringify([r.program, r.params.length]);
    const group = groups.get(key) ?? { program: r.program, arity: r.params.length, at: [] };
    group.at.push(i);
    groups.set(key, group);
  }
  const out: BatchRun[] = new Array(requests.length);
  const jobs: Promise<void>[] = [];
  for (const { program, arity, at } of groups.values()) {
    const perJob = Math.max(1, Math.floor(PARAMS_PER_JOB / Math.max(1, arity)));
    for (let k = 0; k < at.length; k += perJob) {
      const chunk = at.slice(k, k + perJob);
      jobs.push(
        (async () => {
          // A program of no numbers runs alone (the driver tells sets apart by their numbers).
          const flat = chunk.flatMap((i) => (requests[i] as RunRequest).params);
          const result =
            arity === 0 ? null : await sandbox.run({ source: batchSource(program, arity), params: flat });
          const runs = result && batchRuns({ ...result, isolation: String(result.isolation) }, chunk.length);
          for (const [j, i] of chunk.entries()) {
            if (runs) out[i] = runs[j] as BatchRun;
            else {
              // One run under the product's own limits (the sandbox's may be set for batches).
              const alone = await sandbox.run({
                source: program,
                params: (requests[i] as RunRequest).params,
                limits: DEFAULT_LIMITS,
              });
              out[i] = { verdict: alone.verdict, answer: alone.answer };
            }
          }
        })(),
      );
    }
  }
  await Promise.all(jobs);
  return out;
}
