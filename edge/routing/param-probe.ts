/**
 * What a verified program does with each of its parameters, learned at deposit (issue 24): each
 * parameter alone is moved one, then two steps away from zero within its sign (shared/params
 * `perturbLiteral`), the others kept. A parameter is `read` when such a run prints another answer
 * or fails with an error (the program used it); `ignored` when every run printed the same answer
 * (an exponent or a constant the program hard-codes). A timeout or limit says nothing, so it
 * leaves the parameter `ignored`: the safe side, since an ignored parameter must keep its value.
 * Each parameter that is read is then also multiplied and divided by 2 and by 10 (within its kind
 * and sign); every run that printed an answer is kept as evidence of the answer's domain
 * (answer-domain.ts).
 */
import { answersEqual } from "../../shared/answers.js";
import {
  type ParamProfile,
  type ParamRole,
  paramKind,
  paramSign,
  perturbLiteral,
  scaleLiteral,
  shrinkLiteral,
} from "../../shared/params.js";
import type { GpuPool } from "../cluster/gpu-pool.js";

const STEPS = [1, 2];
/**
 * Each nonzero parameter is also scaled up and down by these, the others kept, for the answer's
 * domain only (answer-domain.ts): a range that holds near the verified numbers and this far from
 * them too, on both sides.
 */
const DOMAIN_FACTORS = [2, 10] as const;

/** One probe run that printed an answer: the parameters it ran on and what it printed. */
export interface ProbeRun {
  params: string[];
  answer: string;
}

/** The profile of `program` on the literals it was verified with, whose answer is `answer`. */
export async function profileParameters(
  gpu: Pick<GpuPool, "runProgram">,
  program: string,
  literals: readonly string[],
  answer: string,
): Promise<ParamProfile> {
  return (await profileProgram(gpu, program, literals, answer)).profile;
}

/**
 * The profile, and the probe runs that printed an answer (what edge/routing/answer-domain.ts
 * learns the answer's domain from).
 */
export async function profileProgram(
  gpu: Pick<GpuPool, "runProgram">,
  program: string,
  literals: readonly string[],
  answer: string,
): Promise<{ profile: ParamProfile; runs: ProbeRun[] }> {
  const readsParams = /\bPARAMS\b/.test(program);
  const params = [];
  const runs: ProbeRun[] = [];
  for (const [i, literal] of literals.entries()) {
    const role = readsParams ? await roleOf(gpu, program, literals, i, answer, runs) : "ignored";
    params.push({ literal, kind: paramKind(literal), sign: paramSign(literal), role });
    if (role !== "read" || paramSign(literal) === "zero") continue;
    const moved = DOMAIN_FACTORS.flatMap((f) => [scaleLiteral(literal, f), shrinkLiteral(literal, f)]);
    // Independent runs: at once (the sandbox queues them), so a deposit waits for one, not four.
    const scaled = moved.filter((v) => v !== null).map((v) => literals.map((l, j) => (j === i ? v : l)));
    const results = await Promise.all(scaled.map((params) => gpu.runProgram({ program, params })));
    for (const [k, run] of results.entries())
      if (run.verdict === "ok" && run.answer !== null)
        runs.push({ params: scaled[k] as string[], answer: run.answer });
  }
  return { profile: { version: 1, params }, runs };
}

async function roleOf(
  gpu: Pick<GpuPool, "runProgram">,
  program: string,
  literals: readonly string[],
  index: number,
  answer: string,
  runs: ProbeRun[],
): Promise<ParamRole> {
  let role: ParamRole = "ignored";
  for (const step of STEPS) {
    const params = literals.map((l, j) => (j === index ? perturbLiteral(l, step) : l));
    const run = await gpu.runProgram({ program, params });
    if (run.verdict === "ok" && run.answer !== null) runs.push({ params, answer: run.answer });
    // Every step runs, also once the parameter is known to be read: each run is evidence of the domain.
    if (run.verdict === "error") role = "read";
    if (run.verdict === "ok" && run.answer !== null && !answersEqual(run.answer, answer)) role = "read";
  }
  return role;
}

/** Whether a program can be re-run on new numbers at all: it reads at least one parameter. */
export function isParametricProfile(profile: ParamProfile): boolean {
  return profile.params.some((p) => p.role === "read");
}
