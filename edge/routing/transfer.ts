/**
 * Parametric transfer (flow 1, step 2; issue 24): a query with a library problem's template and
 * new numbers is answered by re-running that problem's verified program on the numbers, only when
 * the numbers play the roles they played at deposit (shared/params `transferParams` against the
 * profile edge/routing/param-probe.ts stored), the program runs cleanly, prints a plain numeric answer, and
 * that answer passes the independent check its problem's shape has (edge/routing/answer-checks.ts) or,
 * where none applies, lies in the verified answer's domain (edge/routing/answer-domain.ts). Such
 * an answer is verified: a verified program computed it on parameters of the verified kind.
 * What the program printed besides its answer never leaves the edge.
 */
import {
  type ParamProfile,
  paramProfileSchema,
  type TransferRefusal,
  type TransferRefusalCode,
  transferParams,
} from "../../shared/params.js";
import type { GpuPool } from "../cluster/gpu-pool.js";
import type { TemplateMatch } from "../db/library.js";
import { type AnswerCheck, checkAnswer } from "./answer-checks.js";
import { domainOf, outsideDomain } from "./answer-domain.js";

/** How a transferred answer was verified (the response's `verification`). */
export interface TransferVerification {
  method: "program_transfer";
  solutionId: string;
  params: "kind_sign_and_role_match";
  answerCheck: AnswerCheck | null;
  note: string;
}

export type TransferResult =
  | {
      ok: true;
      match: TemplateMatch;
      /** The parameters the program ran on (a decimal parameter given an integer gets `.0`). */
      params: string[];
      answer: string;
      verification: TransferVerification;
      ms: number;
    }
  | { ok: false; match: TemplateMatch; refusal: TransferRefusal; ms: number };

/** A numeric answer: an integer of any size, a decimal, a fraction, or a list of them. */
const PLAIN_ANSWER = /^-?\d+(?:\.\d+)?(?:\/\d+)?(?:, ?-?\d+(?:\.\d+)?(?:\/\d+)?)*$/;
const MAX_ANSWER_CHARS = 1100;

/** The stored profile of a solution, or null (deposited before profiles, or malformed). */
function profileOf(match: TemplateMatch): ParamProfile | null {
  const parsed = paramProfileSchema.safeParse(match.solution?.verification.paramProfile);
  return parsed.success ? parsed.data : null;
}

/**
 * Tries the template's verified parametric programs, newest first, on the query's literals; null
 * when the template has none. A refusal is the newest program's.
 */
export async function tryTransfer(
  gpu: Pick<GpuPool, "runProgram">,
  clock: { monotonicMs(): number },
  query: { normalized: string; template: string; literals: readonly string[] },
  matches: TemplateMatch[],
): Promise<TransferResult | null> {
  const candidates = [...matches]
    .reverse()
    .filter((m) => m.solution?.verified && m.solution.parametric && m.solution.program);
  const refusals: { match: TemplateMatch; refusal: TransferRefusal }[] = [];
  for (const match of candidates) {
    const planned = transferParams(profileOf(match), query.literals);
    if (planned.ok) return run(gpu, clock, query, match, planned.params);
    refusals.push({ match, refusal: planned.refusal });
  }
  const [newest] = refusals;
  return newest ? { ok: false, ...newest, ms: 0 } : null;
}

async function run(
  gpu: Pick<GpuPool, "runProgram">,
  clock: { monotonicMs(): number },
  query: { normalized: string; template: string; literals: readonly string[] },
  match: TemplateMatch,
  params: string[],
): Promise<TransferResult> {
  const started = clock.monotonicMs();
  const result = await gpu.runProgram({ program: match.solution?.program as string, params });
  const ms = clock.monotonicMs() - started;
  const refuse = (code: TransferRefusalCode, message: string): TransferResult => ({
    ok: false,
    match,
    refusal: { code, param: null, message },
    ms,
  });
  if (result.verdict !== "ok" || result.answer === null)
    return refuse(
      "program_failed",
      `The verified program did not run cleanly on these numbers (${result.verdict}).`,
    );
  const answer = result.answer.trim();
  if (answer.length > MAX_ANSWER_CHARS || !PLAIN_ANSWER.test(answer))
    return refuse("answer_not_plain", "The program's last line is not a plain numeric answer.");
  const check = checkAnswer(query.normalized, query.template, query.literals, answer);
  if (check && !check.ok)
    return refuse("answer_check_failed", `The answer failed its check (${check.check}).`);
  // An answer its independent check verified needs no domain; any other must lie in the verified one's.
  const solution = match.solution as NonNullable<TemplateMatch["solution"]>;
  const outside = check
    ? null
    : outsideDomain(
        domainOf(solution.verification, match.problem, solution.answer, profileOf(match)),
        params,
        answer,
      );
  if (outside) return refuse("answer_out_of_domain", outside);
  return {
    ok: true,
    match,
    params,
    answer,
    ms,
    verification: {
      method: "program_transfer",
      solutionId: match.solution?.id as string,
      params: "kind_sign_and_role_match",
      answerCheck: check?.check ?? null,
      note:
        "A program verified in the sandbox at deposit computed this answer on the query's numbers, each of the " +
        "kind and sign it was verified with; numbers the program does not read are unchanged" +
        (check
          ? `; the answer passed ${check.check}.`
          : "; no independent check applies to this problem, and the answer lies in the verified answer's domain (its sign, integer or not, its range relative to the numbers)."),
    },
  };
}
