import { constants } from "node:os";
import { answersEqual, extractAnswer } from "../../shared/answers.js";
import { failedExitVerdict } from "../../shared/protocol.js";
import type { ProcessOutcome } from "./process.js";

/** How a program run ended. */
export type Verdict = "ok" | "wrong_answer" | "timeout" | "memory" | "output_limit" | "error";

/**
 * Judges an outcome: limits first (output, then wall clock and CPU, then memory), then a failed
 * exit, then the answer (the last non-empty stdout line) against `expect` when one is given.
 */
export function judge(
  outcome: ProcessOutcome,
  cpuSeconds: number,
  expect: string | undefined,
): { verdict: Verdict; answer: string | null } {
  const answer = extractAnswer(outcome.stdout);
  const { report } = outcome;
  if (outcome.killedFor === "output") return { verdict: "output_limit", answer };
  if (outcome.killedFor === "wall" || outcome.killedFor === "cpu") return { verdict: "timeout", answer };
  if (!report) return { verdict: "error", answer };
  const cpuKilled =
    report.signal === constants.signals.SIGXCPU ||
    (report.signal === constants.signals.SIGKILL && report.cpuMs >= cpuSeconds * 1000);
  if (cpuKilled) return { verdict: "timeout", answer };
  if (report.exit !== 0) {
    return { verdict: failedExitVerdict(outcome.stderr), answer };
  }
  if (expect !== undefined && (answer === null || !answersEqual(answer, expect)))
    return { verdict: "wrong_answer", answer };
  return { verdict: "ok", answer };
}
