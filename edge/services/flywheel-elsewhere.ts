/**
 * Flywheel agreement must hold away from the problem's own numbers. Two programs of different
 * source that print the majority's answer can agree by coincidence: asked for the least common
 * multiple of 12 and 34, the embedded model wrote `n // k` (a count of multiples) and
 * `gcd(a, b)`, and both print 2 (2026-12-06, `npm start`; deposited as verified before this
 * check). So before an agreement is accepted, one program of each distinct source runs on sets
 * of nearby numbers (each parameter moved one and two steps away from zero and doubled, the
 * others kept; then all of them moved one step, and all doubled), and on every set where any of
 * them prints an answer, all must print equal answers. Solutions of one problem compute one
 * function of its numbers and pass; a coincidence fails at once. Fails closed: when no set gave
 * all programs an answer, the agreement is not taken as checked.
 */
import { answersEqual } from "../../shared/answers.js";
import { perturbLiteral, scaleLiteral } from "../../shared/params.js";
import type { GpuPool } from "../cluster/gpu-pool.js";
import { runSets } from "../routing/program-batch.js";

/** Why an agreement is not accepted, or how many sets confirmed it. */
export type Elsewhere =
  | { agrees: true; sets: number }
  | { agrees: false; reason: "programs_disagree_elsewhere"; params: string[]; printed: (string | null)[] }
  | { agrees: false; reason: "agreement_untested"; sets: number };

/** The sets of nearby numbers the programs run on (duplicates and the problem's own left out). */
export function nearbySets(literals: readonly string[]): string[][] {
  const withValue = (i: number, v: string) => literals.map((l, j) => (j === i ? v : l));
  const sets = [
    ...literals.flatMap((l, i) =>
      [perturbLiteral(l, 1), perturbLiteral(l, 2), scaleLiteral(l, 2)].map((v) => withValue(i, v)),
    ),
    literals.map((l) => perturbLiteral(l, 1)),
    literals.map((l) => scaleLiteral(l, 2)),
  ];
  const seen = new Set([JSON.stringify(literals)]);
  return sets.filter((s) => {
    const key = JSON.stringify(s);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Whether `programs` (one per distinct source, each printing `answer` on `literals`) agree on
 * every nearby set where any prints (see the module comment). A problem without numbers has no
 * nearby sets: its programs compute constants, and agreeing on the one answer is all there is.
 */
export async function agreementElsewhere(
  gpu: Pick<GpuPool, "runProgram">,
  programs: readonly string[],
  literals: readonly string[],
  answer: string,
): Promise<Elsewhere> {
  const sets = nearbySets(literals);
  if (sets.length === 0) return { agrees: true, sets: 0 };
  const runs = await Promise.all(programs.map((p) => runSets(gpu, p, literals, answer, sets)));
  let confirmed = 0;
  for (const [s, params] of sets.entries()) {
    const printed = runs.map((r) => {
      const run = r[s];
      return run?.verdict === "ok" ? run.answer : null;
    });
    if (printed.every((p) => p === null)) continue;
    const first = printed[0];
    if (first === null || first === undefined || printed.some((p) => p === null || !answersEqual(p, first)))
      return { agrees: false, reason: "programs_disagree_elsewhere", params, printed };
    confirmed++;
  }
  return confirmed > 0
    ? { agrees: true, sets: confirmed }
    : { agrees: false, reason: "agreement_untested", sets: 0 };
}
