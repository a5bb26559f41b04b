/**
 * `kvgraft eval solve`: the plain model's accuracy through the GPU node's real solve path (its
 * Solver: chat template, reasoning, the grammar-constrained final part, programs in the node's
 * sandbox, the vote), on new instances in the four conditions of the split, with one sample
 * (k = 1) and best-of-k (right when the vote's answer is right). Answers are compared with the
 * generator's (shared/answers.ts answersEqual).
 */
import { cpus, loadavg } from "node:os";
import { answersEqual } from "../../shared/answers.js";
import type { GpuNodeClient } from "../../shared/gpu-client.js";
import type { SolveResult } from "../../shared/solve-protocol.js";
import { CONDITIONS, type Condition, type EvalInstance, evalInstances } from "./instances.js";
import { modelInfo, startEvalGpu } from "./stack.js";

/** Output tokens per sample: the budget `npm start`'s edge gives each of a solve's 4 samples (1,024 / 4). */
export const TOKENS_PER_SAMPLE = 256;

export interface SolveEvalOptions {
  modelPath: string;
  perFamily: number;
  samples: number;
  seed: string;
  temperature: number;
  log: (line: string) => void;
  /** The GPU node's configuration variables (KV_LLAMA, KV_THREADS, KVGRAFT_SANDBOX, ...); default none. */
  gpuEnv?: Readonly<Record<string, string | undefined>>;
}

/** One solve of one instance. */
export interface Attempt {
  answer: string | null;
  right: boolean;
  unsure: boolean;
  tokensOut: number;
  ms: number;
}

/** A condition's totals for one way of solving. */
export interface Score {
  n: number;
  correct: number;
  unsure: number;
  tokensOutPerAnswer: number;
  msPerAnswer: number;
}

export interface SolveEval {
  /** Trained families on their held-out phrasing, k = 1. */
  heldIn: { n: number; correct: number };
  /** Trained families on the second held-out set (phrasings/fresh.ts), k = 1. */
  heldInFresh: { n: number; correct: number };
  heldOut: { n: number; correct: number };
  model: { sha256: string; params: number };
  conditions: Record<Condition, { k1: Score; bestOfK: Score }>;
  settings: {
    perFamily: number;
    samples: number;
    seed: string;
    temperature: number;
    tokensPerSample: number;
  };
  machine: { cpus: number; loadAverage1mStart: number; loadAverage1mEnd: number };
  wallS: number;
  detail: {
    family: string;
    condition: Condition;
    phrasing: number;
    problem: string;
    expected: string;
    k1: Attempt;
    bestOfK: Attempt;
  }[];
}

/** Solves `instance` once with `samples` samples of TOKENS_PER_SAMPLE tokens each. */
export async function solveOnce(
  gpu: GpuNodeClient,
  instance: Pick<EvalInstance, "problem" | "answer">,
  samples: number,
  seed: number,
  temperature: number,
): Promise<Attempt & { result: SolveResult }> {
  const t0 = performance.now();
  const result = await gpu.solve({
    problem: instance.problem,
    samples,
    maxTokens: TOKENS_PER_SAMPLE * samples,
    temperature,
    seed,
  });
  return {
    answer: result.answer,
    right: result.answer !== null && answersEqual(result.answer, instance.answer),
    unsure: result.unsure,
    tokensOut: result.tokensOut,
    ms: Math.round(performance.now() - t0),
    result,
  };
}

/** Totals of attempts. */
export function score(attempts: readonly Attempt[]): Score {
  const n = attempts.length;
  const sum = (f: (a: Attempt) => number) => attempts.reduce((s, a) => s + f(a), 0);
  return {
    n,
    correct: attempts.filter((a) => a.right).length,
    unsure: attempts.filter((a) => a.unsure).length,
    tokensOutPerAnswer: n ? Math.round(sum((a) => a.tokensOut) / n) : 0,
    msPerAnswer: n ? Math.round(sum((a) => a.ms) / n) : 0,
  };
}

/** Runs the evaluation (see the module comment). */
export async function runSolveEval(options: SolveEvalOptions): Promise<SolveEval> {
  const started = performance.now();
  const loadStart = loadavg()[0] ?? 0;
  const model = await modelInfo(options.modelPath);
  const sets = evalInstances(options.perFamily, options.seed);
  const stack = await startEvalGpu(options.modelPath, options.gpuEnv);
  const detail: SolveEval["detail"] = [];
  try {
    const all = CONDITIONS.flatMap((c) => sets[c]);
    for (const [i, instance] of all.entries()) {
      const k1 = await solveOnce(stack.gpu, instance, 1, i, options.temperature);
      const best = await solveOnce(stack.gpu, instance, options.samples, 100_000 + i, options.temperature);
      const strip = ({ result: _r, ...a }: typeof k1): Attempt => a;
      detail.push({
        family: instance.familyId,
        condition: instance.condition,
        phrasing: instance.phrasing,
        problem: instance.problem,
        expected: instance.answer,
        k1: strip(k1),
        bestOfK: strip(best),
      });
      options.log(
        `${i + 1}/${all.length} ${instance.condition} ${instance.familyId}: expected ${instance.answer}; ` +
          `k=1 ${k1.answer} ${k1.right ? "right" : "wrong"} (${k1.ms} ms); ` +
          `best-of-${options.samples} ${best.answer} ${best.right ? "right" : "wrong"} (${best.ms} ms)`,
      );
    }
  } finally {
    await stack.close();
  }
  const of = (c: Condition) => detail.filter((d) => d.condition === c);
  const conditions = Object.fromEntries(
    CONDITIONS.map((c) => [
      c,
      { k1: score(of(c).map((d) => d.k1)), bestOfK: score(of(c).map((d) => d.bestOfK)) },
    ]),
  ) as SolveEval["conditions"];
  return {
    heldIn: { n: conditions.heldOutPhrasing.k1.n, correct: conditions.heldOutPhrasing.k1.correct },
    heldInFresh: { n: conditions.freshPhrasing.k1.n, correct: conditions.freshPhrasing.k1.correct },
    heldOut: { n: conditions.heldOutFamily.k1.n, correct: conditions.heldOutFamily.k1.correct },
    model: { sha256: model.sha256, params: model.params },
    conditions,
    settings: {
      perFamily: options.perFamily,
      samples: options.samples,
      seed: options.seed,
      temperature: options.temperature,
      tokensPerSample: TOKENS_PER_SAMPLE,
    },
    machine: { cpus: cpus().length, loadAverage1mStart: loadStart, loadAverage1mEnd: loadavg()[0] ?? 0 },
    wallS: Math.round((performance.now() - started) / 1000),
    detail,
  };
}
