/**
 * What a verified program does with each of its parameters, learned at deposit (issue 24): each
 * parameter alone is moved one, then two steps away from zero within its sign (shared/params
 * `perturbLiteral`), the others kept. A parameter is `read` when such a run prints another answer
 * or fails with an error (the program used it); `ignored` when every run printed the same answer
 * (an exponent or a constant the program hard-codes). A timeout or limit says nothing, so it
 * leaves the parameter `ignored`: the safe side, since an ignored parameter must keep its value.
 */
import { answersEqual } from "../../shared/answers.js";
import {
  type ParamProfile,
  type ParamRole,
  paramKind,
  paramSign,
  perturbLiteral,
} from "../../shared/params.js";
import type { GpuClient } from "../cluster/gpu.js";

const STEPS = [1, 2];

/** The profile of `program` on the literals it was verified with, whose answer is `answer`. */
export async function profileParameters(
  gpu: Pick<GpuClient, "runProgram">,
  program: string,
  literals: readonly string[],
  answer: string,
): Promise<ParamProfile> {
  const readsParams = /\bPARAMS\b/.test(program);
  const params = [];
  for (const [i, literal] of literals.entries()) {
    const role = readsParams ? await roleOf(gpu, program, literals, i, answer) : "ignored";
    params.push({ literal, kind: paramKind(literal), sign: paramSign(literal), role });
  }
  return { version: 1, params };
}

async function roleOf(
  gpu: Pick<GpuClient, "runProgram">,
  program: string,
  literals: readonly string[],
  index: number,
  answer: string,
): Promise<ParamRole> {
  for (const step of STEPS) {
    const params = literals.map((l, j) => (j === index ? perturbLiteral(l, step) : l));
    const run = await gpu.runProgram({ program, params });
    if (run.verdict === "error") return "read";
    if (run.verdict === "ok" && run.answer !== null && !answersEqual(run.answer, answer)) return "read";
  }
  return "ignored";
}

/** Whether a program can be re-run on new numbers at all: it reads at least one parameter. */
export function isParametricProfile(profile: ParamProfile): boolean {
  return profile.params.some((p) => p.role === "read");
}
