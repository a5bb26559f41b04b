/**
 * `kvgraft eval flywheel`: the reference experiment on the embedded model, through the public
 * HTTP API of a real edge in front of a real GPU node (tools/eval/stack.ts), from an empty library:
 *  1. baseline: held-out families' new-number problems; k = 1 through the GPU node's solve route
 *     (the edge's /v1/solve has no sample count), best-of-k through POST /v1/solve;
 *  2. deposit: the failed and unsure ones are queued (POST /admin/flywheel) and the flywheel worker
 *     runs over the edge's database as `kvgraft flywheel --once` does (more samples, program
 *     agreement); what it leaves unsolved is deposited as an operator would, POST /admin/solutions
 *     with the family's reference program, method and answer;
 *  3. replay: the same problems through POST /v1/solve (library fast path);
 *  4. other instances: (a) same phrasing, new numbers through POST /v1/solve (transfer);
 *     (b) graft forced: the GPU node's graft route on the problem's block with the query as the
 *     edge sends it, the final part's program run in the node's sandbox on the query's numbers;
 *     (c) another phrasing through POST /v1/solve (the router decides);
 *  5. controls (flywheel-controls.ts).
 * Every /v1/solve answer with `verified: true` is checked against the generator's answer. Each
 * answer of steps 1-4 is timed, and on a machine with nvidia-smi charged the GPU's joules over its
 * own time span (one power sampler runs for the whole experiment; idle draw included).
 */
import { cpus, loadavg } from "node:os";
import { z } from "zod";
import { systemClock } from "../../edge/http.js";
import { runFlywheelOnce } from "../../edge/services/flywheel.service.js";
import { startPowerSampler } from "../../gpu-node/telemetry/power.js";
import { answersEqual, extractAnswer } from "../../shared/answers.js";
import { parseFinal } from "../../shared/final-part.js";
import type { GpuNodeClient } from "../../shared/gpu-client.js";
import { renderGraftQuery } from "../../shared/graft-prompt.js";
import type { Family } from "../families/index.js";
import type { Instance } from "../families/render.js";
import { reasoningText } from "../model/transcripts.js";
import { type ControlsResult, runControls } from "./flywheel-controls.js";
import { drawInstance, heldOutFamilies } from "./instances.js";
import { solveOnce, TOKENS_PER_SAMPLE } from "./solve-eval.js";
import { type EvalStack, modelInfo, startEvalStack } from "./stack.js";

export interface FlywheelEvalOptions {
  modelPath: string;
  /** How many held-out families (in file order); default all. */
  families?: number;
  samples: number;
  seed: string;
  /** Output tokens of a graft's answer. */
  graftTokens: number;
  log: (line: string) => void;
  /** The GPU node's configuration variables (KV_LLAMA, KV_THREADS, KVGRAFT_SANDBOX, ...); default none. */
  gpuEnv?: Readonly<Record<string, string | undefined>>;
}

const v1Schema = z.object({
  answer: z.string().nullable(),
  source: z.string(),
  verified: z.boolean(),
  queued: z.boolean(),
  transferRefused: z.object({ code: z.string() }).nullable(),
  route: z.object({ decision: z.string(), blockId: z.string().nullable() }),
  cost: z.object({ gpuTokensOut: z.number(), gpuMs: z.number(), edgeMs: z.number() }),
});

/** One POST /v1/solve answer, scored. */
export interface V1Answer {
  answer: string | null;
  right: boolean;
  source: string;
  verified: boolean;
  decision: string;
  transferRefused: string | null;
  /** Queued for the flywheel (an unsure model answer). */
  queued: boolean;
  gpuTokensOut: number;
  ms: number;
}

/** A forced graft's answer (the GPU node's graft route, the program run in its sandbox). */
export interface GraftAnswer {
  answer: string | null;
  right: boolean;
  tokensOut: number;
  ms: number;
  /** Whether the answer came from the final part's program run on the query's numbers. */
  fromProgram: boolean;
}

export interface FamilyResult {
  family: string;
  problem: string;
  expected: string;
  k1: { answer: string | null; right: boolean; tokensOut: number; ms: number };
  bestOfK: V1Answer;
  deposit: {
    from: "none" | "flywheel" | "operator";
    flywheel: { status: string; reason: string | null } | null;
    answer: string | null;
    right: boolean | null;
  };
  replay: V1Answer | null;
  variant: { problem: string; expected: string; v1: V1Answer; graft: GraftAnswer | null };
  reworded: { problem: string; expected: string; phrasing: number; v1: V1Answer };
}

/** The steps whose answers are timed and charged energy. */
export const PHASES = ["baseline", "bestOfK", "replay", "transfer", "graft", "reworded"] as const;
export type Phase = (typeof PHASES)[number];

/** A step's answers: how many, mean time, and mean GPU energy (null without nvidia-smi). */
export interface PhaseCost {
  answers: number;
  msPerAnswer: number;
  joulesPerAnswer: number | null;
}

export interface FlywheelEval {
  baseline: { n: number; correct: number; tokensOut: number };
  bestOfK: { n: number; correct: number; tokensOut: number };
  deposit: { n: number; fromFlywheel: number; fromOperator: number; flywheelWrong: number };
  replay: { n: number; correct: number; gpuTokens: number };
  transfer: { n: number; correct: number; refused: number; tokensOut: number };
  graft: { n: number; correct: number; tokensOut: number; tokensPerAnswer: number; msPerAnswer: number };
  reworded: { n: number; correct: number; bySource: Record<string, number> };
  controls: ControlsResult;
  wrongVerified: number;
  tokensPerRightAnswer: { bestOfK: number | null; afterDeposit: number | null };
  /** Time and energy per answer by step; `gpuPower` says whether the GPU's power was sampled. */
  perAnswer: Record<Phase, PhaseCost>;
  gpuPower: { sampled: boolean; intervalMs: number; meanWatts: number | null };
  model: { sha256: string; params: number };
  settings: { families: number; samples: number; seed: string; graftTokens: number; tokensPerSample: number };
  machine: { cpus: number; loadAverage1mStart: number; loadAverage1mEnd: number };
  wallS: number;
  families: FamilyResult[];
}

/** POSTs a problem to /v1/solve and scores the answer against `expected`. */
export async function askV1(stack: EvalStack, problem: string, expected: string): Promise<V1Answer> {
  const t0 = performance.now();
  const res = v1Schema.parse(await stack.post("/v1/solve", { problem }));
  return {
    answer: res.answer,
    right: res.answer !== null && answersEqual(res.answer, expected),
    source: res.source,
    verified: res.verified,
    decision: res.route.decision,
    transferRefused: res.transferRefused?.code ?? null,
    queued: res.queued,
    gpuTokensOut: res.cost.gpuTokensOut,
    ms: Math.round(performance.now() - t0),
  };
}

/**
 * Grafts `blockId` for `query` on the GPU node as the edge does (shared/graft-prompt.ts, greedy),
 * and answers as the edge's graft does: the final part's program on the query's numbers when it
 * runs cleanly, else the stated answer, else the text's last line.
 */
export async function forcedGraft(
  gpu: GpuNodeClient,
  blockId: string,
  query: Instance,
  maxTokens: number,
): Promise<GraftAnswer> {
  const t0 = performance.now();
  const result = await gpu.graft({
    blockId,
    query: renderGraftQuery(query.problem, query.literals),
    maxTokens,
  });
  const final = parseFinal(result.text.trim());
  let answer: string | null = null;
  let fromProgram = false;
  if (final.program.trim() !== "") {
    const run = await gpu.sandboxRun({ program: final.program, params: query.literals }).catch(() => null);
    if (run?.verdict === "ok" && run.answer !== null) {
      answer = run.answer;
      fromProgram = true;
    }
  }
  answer ??= final.answer.trim() || extractAnswer(result.text);
  return {
    answer,
    right: answer !== null && answersEqual(answer, query.answer),
    tokensOut: result.tokensOut,
    ms: Math.round(performance.now() - t0),
    fromProgram,
  };
}

const adminSolutionSchema = z.object({ block: z.object({ sha256: z.string() }).nullable() });

/** Deposits an instance as an operator would: its reference program, the family's method, the answer. */
export async function depositReference(
  stack: EvalStack,
  family: Family,
  instance: Instance,
  program?: string,
) {
  const out = adminSolutionSchema.parse(
    await stack.post("/admin/solutions", {
      problem: instance.problem,
      solution: reasoningText(family.method, instance),
      program: program ?? instance.program,
      answer: instance.answer,
    }),
  );
  return out.block?.sha256 ?? null;
}

/** nvidia-smi's power sampling period here: answers of 20-50 ms (replays, transfers) still span a sample or two. */
const POWER_INTERVAL_MS = 50;

const blockOfSchema = z.object({ route: z.object({ blockId: z.string().nullable() }) });

/** Runs the experiment (see the module comment). */
export async function runFlywheelEval(options: FlywheelEvalOptions): Promise<FlywheelEval> {
  const started = performance.now();
  const loadStart = loadavg()[0] ?? 0;
  const { log, seed } = options;
  const model = await modelInfo(options.modelPath);
  const families = heldOutFamilies().slice(0, options.families ?? Number.POSITIVE_INFINITY);
  // Every sample gets npm start's per-sample budget; the edge's /v1/solve spreads its cap over 4 samples.
  const stack = await startEvalStack(options.modelPath, TOKENS_PER_SAMPLE * options.samples, options.gpuEnv);
  const results: FamilyResult[] = [];
  let wrongVerified = 0;
  const power = startPowerSampler(POWER_INTERVAL_MS);
  const spent = Object.fromEntries(PHASES.map((p) => [p, { answers: 0, ms: 0, joules: 0 }])) as Record<
    Phase,
    { answers: number; ms: number; joules: number }
  >;
  /** Runs one answer of `phase`, adding its time and the GPU's joules over its span. */
  const metered = async <T>(phase: Phase, answer: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const result = await answer();
    const t1 = performance.now();
    const s = spent[phase];
    s.answers++;
    s.ms += t1 - t0;
    s.joules += power?.between(t0, t1) ?? 0;
    return result;
  };
  const check = (a: V1Answer, what: string) => {
    if (a.verified && !a.right) {
      wrongVerified++;
      log(`WRONG VERIFIED (${what}): ${a.answer} from ${a.source}`);
    }
    return a;
  };
  try {
    const base = families.map((f) => ({ family: f, instance: drawInstance(f, 0, `${seed}/base`) }));
    log(`1. baseline: ${base.length} held-out families`);
    for (const [i, { family, instance }] of base.entries()) {
      const k1 = await metered("baseline", () => solveOnce(stack.gpu, instance, 1, i, 0.7));
      const best = check(
        await metered("bestOfK", () => askV1(stack, instance.problem, instance.answer)),
        "baseline",
      );
      log(
        `  ${family.id}: expected ${instance.answer}; k=1 ${k1.answer}; best-of-${options.samples} ${best.answer} (${best.source})`,
      );
      const variant = drawInstance(family, 0, `${seed}/variant`);
      const rewordedPhrasing = 1 + (i % (family.phrasings.length - 1));
      const reworded = drawInstance(family, rewordedPhrasing, `${seed}/reworded`);
      results.push({
        family: family.id,
        problem: instance.problem,
        expected: instance.answer,
        k1: { answer: k1.answer, right: k1.right, tokensOut: k1.tokensOut, ms: k1.ms },
        bestOfK: best,
        deposit: { from: "none", flywheel: null, answer: null, right: null },
        replay: null,
        variant: { problem: variant.problem, expected: variant.answer, v1: best, graft: null },
        reworded: {
          problem: reworded.problem,
          expected: reworded.answer,
          phrasing: rewordedPhrasing,
          v1: best,
        },
      });
    }

    log("2. deposit: the flywheel first, then an operator's reference deposit");
    // Wrong, or right but unsure (the edge queued it): what the library should hold.
    const failed = results.filter((r) => !r.bestOfK.right || r.bestOfK.queued);
    for (const r of failed)
      if (!r.bestOfK.queued) await stack.post("/admin/flywheel", { problem: r.problem });
    const deps = { db: stack.edge.db, gpu: stack.edge.gpu, config: stack.edge.config, clock: systemClock };
    const items = new Map<string, { status: string; reason: string | null; answer: string | null }>();
    for (;;) {
      const item = await runFlywheelOnce(deps);
      if (!item) break;
      const result = item.result ?? {};
      const accepted = (result.accepted ?? null) as { answer?: string } | null;
      const reason = typeof result.reason === "string" ? result.reason : null;
      items.set(item.problem, { status: item.status, reason, answer: accepted?.answer ?? null });
      log(
        `  flywheel: ${item.status}${reason ? ` (${reason})` : ""} ${accepted?.answer ?? ""}: ${item.problem.slice(0, 60)}`,
      );
    }
    const blocks = new Map<string, string>();
    for (const r of failed) {
      const family = families.find((f) => f.id === r.family) as Family;
      const item = items.get(r.problem) ?? null;
      const flywheel = item ? { status: item.status, reason: item.reason } : null;
      if (item?.status === "accepted") {
        r.deposit = {
          from: "flywheel",
          flywheel,
          answer: item.answer,
          right: item.answer !== null && answersEqual(item.answer, r.expected),
        };
        const routed = blockOfSchema.parse(
          await stack.post("/v1/solve", { problem: r.problem, mode: "verified" }),
        );
        if (routed.route.blockId) blocks.set(r.family, routed.route.blockId);
      } else {
        const instance = drawInstance(family, 0, `${seed}/base`);
        const block = await depositReference(stack, family, instance);
        if (block) blocks.set(r.family, block);
        r.deposit = { from: "operator", flywheel, answer: instance.answer, right: true };
      }
    }

    log("3. replay");
    for (const r of failed)
      r.replay = check(await metered("replay", () => askV1(stack, r.problem, r.expected)), "replay");

    log("4. other instances: transfer, graft forced, re-worded");
    for (const r of failed) {
      const family = families.find((f) => f.id === r.family) as Family;
      const variant = drawInstance(family, 0, `${seed}/variant`);
      r.variant.v1 = check(
        await metered("transfer", () => askV1(stack, variant.problem, variant.answer)),
        "transfer",
      );
      const block = blocks.get(r.family);
      r.variant.graft = block
        ? await metered("graft", () => forcedGraft(stack.gpu, block, variant, options.graftTokens))
        : null;
      r.reworded.v1 = check(
        await metered("reworded", () => askV1(stack, r.reworded.problem, r.reworded.expected)),
        "reworded",
      );
      log(
        `  ${r.family}: transfer ${r.variant.v1.source} ${r.variant.v1.answer} (${r.variant.v1.right ? "right" : "wrong"}); ` +
          `graft ${r.variant.graft?.answer} (${r.variant.graft?.right ? "right" : "wrong"}); ` +
          `reworded ${r.reworded.v1.source} ${r.reworded.v1.answer} (${r.reworded.v1.right ? "right" : "wrong"})`,
      );
    }

    log("5. controls");
    const controls = await runControls(stack, {
      deposited: failed.map((r) => ({
        family: families.find((f) => f.id === r.family) as Family,
        instance: drawInstance(families.find((f) => f.id === r.family) as Family, 0, `${seed}/base`),
        variant: drawInstance(families.find((f) => f.id === r.family) as Family, 0, `${seed}/variant`),
        block: blocks.get(r.family) ?? null,
        graftRight: r.variant.graft?.right ?? false,
      })),
      seed,
      graftTokens: options.graftTokens,
      log,
    });
    wrongVerified += controls.wrongVerified;

    const sum = <T>(xs: T[], f: (x: T) => number) => xs.reduce((s, x) => s + f(x), 0);
    const transfers = failed.filter((r) => r.variant.v1.source === "transfer");
    const grafts = failed.flatMap((r) => (r.variant.graft ? [r.variant.graft] : []));
    const bySource: Record<string, number> = {};
    for (const r of failed) bySource[r.reworded.v1.source] = (bySource[r.reworded.v1.source] ?? 0) + 1;
    const bestTokens = sum(results, (r) => r.bestOfK.gpuTokensOut);
    const bestRight = results.filter((r) => r.bestOfK.right).length;
    const replays = failed.flatMap((r) => (r.replay ? [r.replay] : []));
    const graftTokens = sum(grafts, (g) => g.tokensOut);
    const graftRight = grafts.filter((g) => g.right).length;
    const reading = power?.stop() ?? null;
    const perAnswer = Object.fromEntries(
      PHASES.map((p) => {
        const { answers, ms, joules } = spent[p];
        const cost: PhaseCost = {
          answers,
          msPerAnswer: answers ? Math.round(ms / answers) : 0,
          joulesPerAnswer: reading && answers ? Math.round((joules / answers) * 100) / 100 : null,
        };
        return [p, cost];
      }),
    ) as Record<Phase, PhaseCost>;
    return {
      baseline: {
        n: results.length,
        correct: results.filter((r) => r.k1.right).length,
        tokensOut: sum(results, (r) => r.k1.tokensOut),
      },
      bestOfK: { n: results.length, correct: bestRight, tokensOut: bestTokens },
      deposit: {
        n: failed.length,
        fromFlywheel: failed.filter((r) => r.deposit.from === "flywheel").length,
        fromOperator: failed.filter((r) => r.deposit.from === "operator").length,
        flywheelWrong: failed.filter((r) => r.deposit.from === "flywheel" && r.deposit.right === false)
          .length,
      },
      replay: {
        n: replays.length,
        correct: replays.filter((a) => a.right).length,
        gpuTokens: sum(replays, (a) => a.gpuTokensOut),
      },
      transfer: {
        n: transfers.length,
        correct: transfers.filter((r) => r.variant.v1.right).length,
        refused: failed.filter((r) => r.variant.v1.transferRefused !== null).length,
        tokensOut: sum(transfers, (r) => r.variant.v1.gpuTokensOut),
      },
      graft: {
        n: grafts.length,
        correct: graftRight,
        tokensOut: graftTokens,
        tokensPerAnswer: grafts.length ? Math.round(graftTokens / grafts.length) : 0,
        msPerAnswer: grafts.length ? Math.round(sum(grafts, (g) => g.ms) / grafts.length) : 0,
      },
      reworded: {
        n: failed.length,
        correct: failed.filter((r) => r.reworded.v1.right).length,
        bySource,
      },
      controls,
      wrongVerified,
      tokensPerRightAnswer: {
        bestOfK: bestRight ? Math.round(bestTokens / bestRight) : null,
        afterDeposit: graftRight ? Math.round(graftTokens / graftRight) : null,
      },
      perAnswer,
      gpuPower: {
        sampled: reading !== null,
        intervalMs: POWER_INTERVAL_MS,
        meanWatts: reading ? Math.round(reading.meanWatts * 10) / 10 : null,
      },
      model: { sha256: model.sha256, params: model.params },
      settings: {
        families: families.length,
        samples: options.samples,
        seed,
        graftTokens: options.graftTokens,
        tokensPerSample: TOKENS_PER_SAMPLE,
      },
      machine: { cpus: cpus().length, loadAverage1mStart: loadStart, loadAverage1mEnd: loadavg()[0] ?? 0 },
      wallS: Math.round((performance.now() - started) / 1000),
      families: results,
    };
  } finally {
    power?.stop(); // a no-op after the reading above; stops the sampler when a step threw
    await stack.close();
  }
}
