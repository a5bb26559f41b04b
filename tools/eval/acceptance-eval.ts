/**
 * `kvgraft eval acceptance`: how often the flywheel would deposit a wrong answer as verified, by
 * the agreement rule alone (flywheel-judge.ts) and with its check on nearby numbers
 * (flywheel-elsewhere.ts), on problems the model is unsure of. New instances of the trained
 * families on their second held-out phrasings and of the held-out families (tools/eval/instances.ts;
 * numbers drawn from a seed no training set uses) are queued with no reference answer, one at a
 * time, and the real flywheel worker runs each (baseline, heavy solve, judge, check, deposit) on a
 * real edge and GPU node on loopback. One run gives both rules: an item the check rejected is one
 * the judge alone would have accepted.
 */

import { systemClock } from "../../edge/http.js";
import { runFlywheelOnce } from "../../edge/services/flywheel.service.js";
import { answersEqual } from "../../shared/answers.js";
import type { Condition } from "./instances.js";
import { evalInstances } from "./instances.js";
import { type ModelInfo, modelInfo, startEvalStack } from "./stack.js";

/** The reasons the nearby-numbers check gives: the judge had accepted these. */
const CHECK_REASONS = new Set(["programs_disagree_elsewhere", "agreement_untested"]);
export const ACCEPTANCE_CONDITIONS = [
  "freshPhrasing",
  "heldOutFamily",
] as const satisfies readonly Condition[];
export type AcceptanceCondition = (typeof ACCEPTANCE_CONDITIONS)[number];

export interface AcceptanceEvalOptions {
  modelPath: string;
  /** Instances a family per condition (evalInstances); the trained families give two a draw. */
  perFamily: number;
  seed: string;
  /** The conditions to draw from (both when absent). */
  conditions?: readonly AcceptanceCondition[];
  /** Problems of one's own with their right answers, in place of the drawn instances (condition `given`). */
  problems?: readonly { problem: string; answer: string }[];
  /** Only the first this many instances (a quick run); all when absent. */
  limit?: number;
  log: (line: string) => void;
  gpuEnv?: Readonly<Record<string, string | undefined>>;
}

/** Counts of one condition (or all): what each rule would have deposited, and how much of it is wrong. */
export interface AcceptanceCounts {
  items: number;
  /** The agreement rule alone accepted (deposited, or rejected by the check only). */
  judgeAccepted: number;
  judgeWrong: number;
  /** Deposited with the check (the product now). */
  deposited: number;
  depositedWrong: number;
  /** What the check turned away, by whether the judge's answer was right. */
  checkRejectedRight: number;
  checkRejectedWrong: number;
}

export interface AcceptanceCase {
  condition: Condition | "given";
  /** The generator's family (null for a problem of one's own). */
  family: string | null;
  problem: string;
  expected: string;
  status: string;
  reason: string | null;
  /** The answer the judge accepted (null when it accepted none). */
  judged: string | null;
  right: boolean | null;
}

export interface AcceptanceEval {
  total: AcceptanceCounts;
  /** By condition, for those present (`given`: the problems of `problems`). */
  byCondition: Partial<Record<AcceptanceCondition | "given", AcceptanceCounts>>;
  model: ModelInfo;
  settings: { perFamily: number; seed: string; conditions: AcceptanceCondition[]; limit: number | null };
  wallS: number;
  cases: AcceptanceCase[];
}

const zero = (): AcceptanceCounts => ({
  items: 0,
  judgeAccepted: 0,
  judgeWrong: 0,
  deposited: 0,
  depositedWrong: 0,
  checkRejectedRight: 0,
  checkRejectedWrong: 0,
});

/** The totals and the per-condition counts of `cases`. */
export function countCases(cases: readonly AcceptanceCase[]): Pick<AcceptanceEval, "total" | "byCondition"> {
  const total = zero();
  const byCondition: AcceptanceEval["byCondition"] = {};
  for (const c of cases) {
    count(total, c);
    const key = c.condition as AcceptanceCondition | "given";
    byCondition[key] ??= zero();
    count(byCondition[key], c);
  }
  return { total, byCondition };
}

function count(into: AcceptanceCounts, c: AcceptanceCase): void {
  into.items++;
  if (c.judged === null) return;
  into.judgeAccepted++;
  if (!c.right) into.judgeWrong++;
  if (c.status === "accepted") {
    into.deposited++;
    if (!c.right) into.depositedWrong++;
  } else if (c.reason !== null && CHECK_REASONS.has(c.reason)) {
    if (c.right) into.checkRejectedRight++;
    else into.checkRejectedWrong++;
  }
}

/** Runs the evaluation (see the module comment). */
export async function runAcceptanceEval(options: AcceptanceEvalOptions): Promise<AcceptanceEval> {
  const started = performance.now();
  const conditions = options.conditions ?? ACCEPTANCE_CONDITIONS;
  const drawn = () => {
    const sets = evalInstances(options.perFamily, options.seed);
    return conditions.flatMap((condition) => sets[condition]);
  };
  const instances = (
    options.problems
      ? options.problems.map((p) => ({ ...p, condition: "given" as const, familyId: null }))
      : drawn().map((i) => ({
          problem: i.problem,
          answer: i.answer,
          condition: i.condition,
          familyId: i.familyId,
        }))
  ).slice(0, options.limit);
  const model = await modelInfo(options.modelPath);
  options.log(
    `${instances.length} problems through the flywheel, one at a time (model ${model.sha256.slice(0, 12)})`,
  );
  const stack = await startEvalStack(options.modelPath, 1024, options.gpuEnv);
  const cases: AcceptanceCase[] = [];
  try {
    const deps = { db: stack.edge.db, gpu: stack.edge.gpu, config: stack.edge.config, clock: systemClock };
    for (const [i, instance] of instances.entries()) {
      await stack.post("/admin/flywheel", { problem: instance.problem });
      const item = await runFlywheelOnce(deps);
      if (!item) throw new Error(`the flywheel had nothing queued after ${instance.problem}`);
      const result = (item.result ?? {}) as Record<string, unknown>;
      const reason = typeof result.reason === "string" ? result.reason : null;
      // Judged acceptable: deposited, or refused after the judge (by the check or the deposit's own checks).
      const taken = (result.accepted ?? result.rejectedCandidate ?? null) as { answer?: string } | null;
      const judged = taken?.answer ?? null;
      const c: AcceptanceCase = {
        condition: instance.condition,
        family: instance.familyId,
        problem: instance.problem,
        expected: instance.answer,
        status: item.status,
        reason,
        judged,
        right: judged === null ? null : answersEqual(judged, instance.answer),
      };
      cases.push(c);
      options.log(
        `  ${i + 1}/${instances.length} ${c.family ?? c.problem.slice(0, 50)}: ${c.status}${reason ? ` (${reason})` : ""}` +
          `${judged === null ? "" : ` ${judged} (${c.right ? "right" : `wrong, expected ${c.expected}`})`}`,
      );
    }
  } finally {
    await stack.close();
  }
  return {
    ...countCases(cases),
    model,
    settings: {
      perFamily: options.perFamily,
      seed: options.seed,
      conditions: options.problems ? [] : [...conditions],
      limit: options.limit ?? null,
    },
    wallS: Math.round((performance.now() - started) / 1000),
    cases,
  };
}
