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
import { type BatchRun, runSets } from "./program-batch.js";

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
 * learns the answer's domain from). Every probe set is known before any runs, so they go to the
 * sandbox together (program-batch.ts: in one job where that proves the same as one run each); the
 * scaled sets of a parameter that turns out `ignored` run too, and are not recorded.
 */
export async function profileProgram(
  gpu: Pick<GpuPool, "runProgram">,
  program: string,
  literals: readonly string[],
  answer: string,
): Promise<{ profile: ParamProfile; runs: ProbeRun[] }> {
  const readsParams = /\bPARAMS\b/.test(program);
  const withValue = (i: number, v: string) => literals.map((l, j) => (j === i ? v : l));
  const plans = literals.map((literal, i) => ({
    steps: STEPS.map((step) => withValue(i, perturbLiteral(literal, step))),
    scaled:
      paramSign(literal) === "zero"
        ? []
        : DOMAIN_FACTORS.flatMap((f) => [scaleLiteral(literal, f), shrinkLiteral(literal, f)])
            .filter((v) => v !== null)
            .map((v) => withValue(i, v)),
  }));
  const sets = readsParams ? plans.flatMap((p) => [...p.steps, ...p.scaled]) : [];
  const results = await runSets(gpu, program, literals, answer, sets);
  const params = [];
  const runs: ProbeRun[] = [];
  let next = 0;
  const take = (list: string[][]) => list.map((params) => ({ params, run: results[next++] as BatchRun }));
  for (const [i, literal] of literals.entries()) {
    const plan = plans[i] as (typeof plans)[number];
    const steps = readsParams ? take(plan.steps) : [];
    const scaled = readsParams ? take(plan.scaled) : [];
    let role: ParamRole = "ignored";
    // Every step counts, also once the parameter is known to be read: each run is evidence of the domain.
    for (const { params, run } of steps) {
      if (run.verdict === "ok" && run.answer !== null) runs.push({ params, answer: run.answer });
      if (run.verdict === "error") role = "read";
      if (run.verdict === "ok" && run.answer !== null && !answersEqual(run.answer, answer)) role = "read";
    }
    params.push({ literal, kind: paramKind(literal), sign: paramSign(literal), role });
    if (role !== "read") continue;
    for (const { params, run } of scaled)
      if (run.verdict === "ok" && run.answer !== null) runs.push({ params, answer: run.answer });
  }
  return { profile: { version: 1, params }, runs };
}

/** Whether a program can be re-run on new numbers at all: it reads at least one parameter. */
export function isParametricProfile(profile: ParamProfile): boolean {
  return profile.params.some((p) => p.role === "read");
}
