/**
 * Flywheel acceptance: the candidates a heavier solve produced are judged (agreement of two
 * independent programs with the majority, or an admin's reference answer), and an accepted one is
 * deposited through the admin solutions path (program checked in the sandbox, one block per
 * problem, registered).
 */
import { answersEqual } from "../../shared/answers.js";
import type { SolveSample } from "../../shared/solve-protocol.js";
import { tally } from "../../shared/vote.js";
import { adminSolutionRequestSchema } from "../schemas.js";
import { type AdminDeps, depositSolution } from "./admin.service.js";

/** Characters of a sample's reasoning kept in the item's record (the worked solution). */
const REASONING_CHARS = 20_000;

/** One recorded sample of the heavy solve: what acceptance judges. */
export interface Candidate {
  seed: number;
  stated: string | null;
  program: string | null;
  /** What the program printed when it ran cleanly, else null. */
  printed: string | null;
  verdict: string | null;
  reasoning: string;
}

/** An accepted candidate: what gets deposited, and on what grounds. */
export interface Accepted {
  answer: string;
  program: string;
  solution: string;
  basis: "agreement" | "reference_program" | "reference_stated";
  seeds: number[];
}

/**
 * Judges the candidates. Agreement: two programs from different samples, with different source,
 * printed the same answer as the majority of stated answers. Reference: a program printed it
 * (that program is deposited), or else a stated answer equals it; then the program deposited
 * prints the reference itself, which the parametric check marks as not transferable.
 */
export function judge(
  candidates: readonly Candidate[],
  reference: string | null,
): { accepted: Accepted } | { reason: string } {
  const solution = (c: Candidate) => c.reasoning.trim() || "(the model gave no worked solution)";
  if (reference !== null) {
    const printer = candidates.find((c) => c.printed !== null && answersEqual(c.printed, reference));
    if (printer?.program)
      return {
        accepted: {
          answer: reference,
          program: printer.program,
          solution: solution(printer),
          basis: "reference_program",
          seeds: [printer.seed],
        },
      };
    const stater = candidates.find((c) => c.stated !== null && answersEqual(c.stated, reference));
    if (stater)
      return {
        accepted: {
          answer: reference,
          program: `print(${JSON.stringify(reference.trim())})\n`,
          solution: solution(stater),
          basis: "reference_stated",
          seeds: [stater.seed],
        },
      };
    return { reason: "no_candidate_matches_reference" };
  }
  const majority = tally(
    candidates.map((c) => ({ stated: c.stated, program: null })),
    0,
  ).answer;
  if (majority === null) return { reason: "no_stated_answer" };
  const agreeing = candidates.filter(
    (c) => c.program !== null && c.printed !== null && answersEqual(c.printed, majority),
  );
  const first = agreeing[0];
  if (!first?.program || agreeing.length < 2 || distinctPrograms(agreeing).length < 2)
    return { reason: "no_agreement" };
  return {
    accepted: {
      answer: majority,
      program: first.program,
      solution: solution(first),
      basis: "agreement",
      seeds: agreeing.map((c) => c.seed),
    },
  };
}

/**
 * One program per distinct source (whitespace runs aside) among `candidates`, in their order:
 * the independent programs an agreement rests on.
 */
export function distinctPrograms(candidates: readonly Candidate[]): string[] {
  const bySource = new Map<string, string>();
  for (const c of candidates) {
    const key = (c.program ?? "").replace(/\s+/g, " ").trim();
    if (c.program && key && !bySource.has(key)) bySource.set(key, c.program);
  }
  return [...bySource.values()];
}

/** The candidates a merged solve gives acceptance to judge. */
export function candidatesOf(samples: readonly SolveSample[]): Candidate[] {
  return samples.map((s) => ({
    seed: s.seed,
    stated: s.answer,
    program: s.program?.trim() ? s.program : null,
    printed: s.run?.verdict === "ok" ? s.run.answer : null,
    verdict: s.run?.verdict ?? null,
    reasoning: s.reasoning.slice(0, REASONING_CHARS),
  }));
}

/** Deposits an accepted candidate through the admin solutions path. */
export async function depositAccepted(deps: AdminDeps, problem: string, accepted: Accepted) {
  const input = adminSolutionRequestSchema.parse({
    problem,
    solution: accepted.solution,
    program: accepted.program,
    answer: accepted.answer,
  });
  const outcome = await depositSolution(deps, input);
  return {
    created: outcome.created,
    problemId: outcome.problem.id,
    solutionId: outcome.solution.id,
    blockSha256: outcome.block?.sha256 ?? null,
  };
}

/** The accepted candidate without its worked solution (what an item records). */
export function omitSolution(accepted: Accepted): Omit<Accepted, "solution"> {
  const { solution: _solution, ...rest } = accepted;
  return rest;
}
