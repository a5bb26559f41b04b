/**
 * The flywheel: problems the model was unsure of wait in the queue
 * (edge/db/flywheel-queue.ts); a worker claims them one at a time and
 *  1. drops problems the library already answers and problems the model answers confidently at
 *     the plain budget (only what the model lacked is deposited),
 *  2. solves them again with a bigger budget (more samples, longer outputs), one sample per GPU
 *     request so that other work gets the node between samples,
 *  3. accepts a candidate when two independent programs (different samples, different source)
 *     print the same answer as the majority of stated answers, or when a candidate matches the
 *     item's reference answer (an admin's),
 *  4. deposits it through the admin solutions path (program checked in the sandbox, one block
 *     per problem, registered); a rejected item leaves no block.
 * Every item records what it cost. Admins can accept a finished item against a reference answer
 * (the recorded candidates are judged again; nothing is regenerated) or reject an open one.
 *
 * The flywheel is a configuration switch (`KVGRAFT_FLYWHEEL`, edge/config.ts): off, nothing is
 * queued and no worker runs. Each step of an item is logged (`flywheel step`) and recorded on the
 * item while it runs, so `GET /admin/flywheel` shows where the worker is.
 */
import { ZodError } from "zod";
import { answersEqual } from "../../shared/answers.js";
import { DomainError } from "../../shared/errors.js";
import type { Logger } from "../../shared/http/logger.js";
import { problemTemplate } from "../../shared/normalize.js";
import { GPU_ERROR } from "../../shared/protocol.js";
import type { SolveResult, SolveSample } from "../../shared/solve-protocol.js";
import { tally } from "../../shared/vote.js";
import {
  claimNextFlywheel,
  type FlywheelItem,
  type FlywheelProgress,
  finishFlywheel,
  recordFlywheelProgress,
  requeueFlywheel,
} from "../db/flywheel-queue.js";
import { findVerifiedByFingerprint } from "../db/library.js";
import type { AdminDeps } from "./admin.service.js";
import { agreementElsewhere } from "./flywheel-elsewhere.js";
import { candidatesOf, depositAccepted, distinctPrograms, judge, omitSolution } from "./flywheel-judge.js";

/** How much compute the flywheel spends per item. */
export interface FlywheelBudget {
  /** The plain solve that must be unsure for a deposit (the edge's own budget). */
  baseline: { samples: number; maxTokens: number };
  /** The heavier solve. */
  heavy: { samples: number; maxTokens: number };
  temperature: number;
  /** Sample i of the heavy solve uses seed `seed + i` (the baseline: `seed + 10_000 + i`). */
  seed: number;
  minConfidence: number;
}

export const DEFAULT_FLYWHEEL_BUDGET: FlywheelBudget = {
  baseline: { samples: 4, maxTokens: 256 },
  heavy: { samples: 8, maxTokens: 4096 },
  temperature: 0.8,
  seed: 1000,
  minConfidence: 0.6,
};

/** GPU failures after which an item is given up instead of queued again. */
const MAX_ATTEMPTS = 3;

/** What an item cost, summed over its GPU requests. */
export interface FlywheelCost {
  requests: number;
  tokensIn: number;
  tokensOut: number;
  gpuMs: number;
  sandboxMs: number;
  /** Null when the GPU node reported no energy (no NVIDIA GPU). */
  energyWh: number | null;
  wallMs: number;
}

/** A solve made of single-sample requests, merged; the vote is recounted over all samples. */
interface Merged {
  result: Pick<SolveResult, "answer" | "confidence" | "unsure" | "programsAgree"> & {
    samples: SolveSample[];
  };
  cost: FlywheelCost;
}

async function solveBySample(
  deps: AdminDeps,
  problem: string,
  size: { samples: number; maxTokens: number },
  budget: FlywheelBudget,
  seed: number,
  onSample: (done: number) => Promise<void>,
  signal?: AbortSignal,
): Promise<Merged> {
  const perSample = Math.max(1, Math.floor(size.maxTokens / size.samples));
  const samples: SolveSample[] = [];
  const cost = emptyCost();
  await onSample(0);
  for (let i = 0; i < size.samples; i++) {
    const r = await deps.gpu.solve(
      {
        problem,
        samples: 1,
        maxTokens: perSample,
        temperature: budget.temperature,
        seed: seed + i,
        minConfidence: budget.minConfidence,
        // It yields to users' work on the node (gpu-node/server/foreground.ts).
        priority: "background",
      },
      { signal },
    );
    samples.push(...r.samples);
    addCost(cost, {
      requests: 1,
      tokensIn: r.tokensIn,
      tokensOut: r.tokensOut,
      gpuMs: r.gpuMs,
      sandboxMs: r.sandboxMs,
      energyWh: r.energy?.wh ?? null,
      wallMs: 0,
    });
    await onSample(i + 1);
  }
  const votes = tally(
    samples.map((s) => ({ stated: s.answer, program: s.run?.verdict === "ok" ? s.run.answer : null })),
    budget.minConfidence,
  );
  return { result: { ...votes, samples }, cost };
}

function emptyCost(): FlywheelCost {
  return { requests: 0, tokensIn: 0, tokensOut: 0, gpuMs: 0, sandboxMs: 0, energyWh: null, wallMs: 0 };
}

function addCost(into: FlywheelCost, add: FlywheelCost): void {
  into.requests += add.requests;
  into.tokensIn += add.tokensIn;
  into.tokensOut += add.tokensOut;
  into.gpuMs += add.gpuMs;
  into.sandboxMs += add.sandboxMs;
  if (add.energyWh !== null) into.energyWh = (into.energyWh ?? 0) + add.energyWh;
}

/** A refusal that is about the candidate (a 4xx or a bad shape), not a failure of the services. */
function refusalCode(err: unknown): string | null {
  if (err instanceof ZodError) return "invalid_candidate";
  if (err instanceof DomainError && err.status < 500 && err.status !== 429) return err.code;
  return null;
}

/** How a worker runs an item: its stop signal, and where each step is logged. */
export interface FlywheelRunOptions {
  /** Aborts the item in progress (it goes back to the queue). */
  signal?: AbortSignal;
  logger?: Logger;
}

/** Processes one claimed (running) item to accepted or rejected; see the module comment. */
export async function processFlywheelItem(
  deps: AdminDeps,
  item: FlywheelItem,
  budget: FlywheelBudget = DEFAULT_FLYWHEEL_BUDGET,
  options: FlywheelRunOptions = {},
): Promise<FlywheelItem> {
  const { signal, logger } = options;
  const started = deps.clock.monotonicMs();
  const cost = emptyCost();
  const reference = item.referenceAnswer;
  const close = async (status: "accepted" | "rejected", result: Record<string, unknown>) => {
    const wallMs = Math.round(deps.clock.monotonicMs() - started);
    const closed = await finishFlywheel(deps.db, item.id, {
      status,
      cost: { ...cost, wallMs },
      result: { reference, ...result },
    });
    logger?.info("flywheel step", {
      itemId: item.id,
      step: "done",
      status,
      reason: typeof result.reason === "string" ? result.reason : null,
      requests: cost.requests,
      tokensOut: cost.tokensOut,
      wallMs,
    });
    return closed;
  };
  /** Records a step on the item (the admin route shows it), then logs it. */
  const step = async (progress: Omit<FlywheelProgress, "at">) => {
    await recordFlywheelProgress(deps.db, item.id, {
      ...progress,
      at: new Date(deps.clock.now()).toISOString(),
    });
    logger?.info("flywheel step", { itemId: item.id, attempt: item.attempts, ...progress });
  };
  const sampled = (name: "baseline" | "heavy", samples: number) => (sample: number) =>
    step({ step: name, sample, samples });
  try {
    await step({ step: "library_check" });
    if (await findVerifiedByFingerprint(deps.db, item.fingerprint))
      return await close("rejected", { reason: "already_verified" });

    const baseline = await solveBySample(
      deps,
      item.problem,
      budget.baseline,
      budget,
      budget.seed + 10_000,
      sampled("baseline", budget.baseline.samples),
      signal,
    );
    addCost(cost, baseline.cost);
    const known = baseline.result;
    if (
      !known.unsure &&
      (reference === null || (known.answer !== null && answersEqual(known.answer, reference)))
    )
      return await close("rejected", {
        reason: "model_confident",
        answer: known.answer,
        confidence: known.confidence,
      });

    const heavy = await solveBySample(
      deps,
      item.problem,
      budget.heavy,
      budget,
      budget.seed,
      sampled("heavy", budget.heavy.samples),
      signal,
    );
    addCost(cost, heavy.cost);
    await step({ step: "judging" });
    const candidates = candidatesOf(heavy.result.samples);
    const summary = {
      answer: heavy.result.answer,
      confidence: heavy.result.confidence,
      programsAgree: heavy.result.programsAgree,
      baseline: { answer: known.answer, confidence: known.confidence },
      candidates,
    };
    const verdict = judge(candidates, reference);
    if ("reason" in verdict) return await close("rejected", { reason: verdict.reason, ...summary });
    if (verdict.accepted.basis === "agreement") {
      // Agreement at the problem's own numbers can be coincidence (flywheel-elsewhere.ts).
      await step({ step: "checking" });
      const agreeing = candidates.filter((c) => verdict.accepted.seeds.includes(c.seed));
      const elsewhere = await agreementElsewhere(
        deps.gpu,
        distinctPrograms(agreeing),
        problemTemplate(item.problem).literals,
        verdict.accepted.answer,
      );
      if (!elsewhere.agrees) {
        const { agrees: _, ...why } = elsewhere;
        return await close("rejected", {
          ...why,
          rejectedCandidate: omitSolution(verdict.accepted),
          ...summary,
        });
      }
    }
    await step({ step: "depositing" });
    try {
      const deposited = await depositAccepted(deps, item.problem, verdict.accepted);
      if (!deposited.created) return await close("rejected", { reason: "already_verified", ...summary });
      return await close("accepted", { ...summary, accepted: omitSolution(verdict.accepted), ...deposited });
    } catch (err) {
      const code = refusalCode(err);
      if (code === null) throw err;
      return await close("rejected", {
        reason: code,
        rejectedCandidate: omitSolution(verdict.accepted),
        ...summary,
      });
    }
  } catch (err) {
    const refused = refusalCode(err);
    if (refused !== null && !signal?.aborted) return close("rejected", { reason: refused });
    const failed = err instanceof DomainError ? err.code : "internal_error";
    // The node was busy with users' work the whole time its solve waited: not the item's failure.
    const deferred = isBackgroundDeferred(err);
    if (signal?.aborted || deferred || item.attempts < MAX_ATTEMPTS) {
      await requeueFlywheel(deps.db, item.id, new Date(deps.clock.now()), { refundAttempt: deferred });
      throw err;
    }
    return close("rejected", { reason: "gpu_failed", error: failed });
  }
}

/** Whether `err` is a GPU node's 429 `background_deferred`: it was busy with users' work. */
export function isBackgroundDeferred(err: unknown): boolean {
  return err instanceof DomainError && err.details?.upstreamCode === GPU_ERROR.background_deferred;
}

/** Claims and processes the next queued item; null when the queue is empty. */
export async function runFlywheelOnce(
  deps: AdminDeps,
  budget: FlywheelBudget = DEFAULT_FLYWHEEL_BUDGET,
  options: FlywheelRunOptions = {},
): Promise<FlywheelItem | null> {
  const item = await claimNextFlywheel(deps.db, { reclaimAfterMs: RECLAIM_AFTER_MS });
  return item ? processFlywheelItem(deps, item, budget, options) : null;
}

/** A running item whose worker has been silent this long is handed out again. */
const RECLAIM_AFTER_MS = 60 * 60_000;
