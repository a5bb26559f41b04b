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
import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { ZodError } from "zod";
import { answersEqual } from "../shared/answers.js";
import { conflict, DomainError, notFound, unprocessable } from "../shared/errors.js";
import { sha256Hex } from "../shared/hash.js";
import { normalizeProblem } from "../shared/normalize.js";
import type { SolveResult, SolveSample } from "../shared/protocol.js";
import { tally } from "../shared/vote.js";
import { type AdminDeps, depositSolution } from "./admin.service.js";
import type { Database } from "./db/client.js";
import { type FlywheelStatus, flywheelQueue, queries } from "./db/schema.js";
import { type Logger, systemClock } from "./http.js";
import {
  claimNextFlywheel,
  enqueueFlywheel,
  type FlywheelItem,
  type FlywheelProgress,
  findVerifiedByFingerprint,
  finishFlywheel,
  listFlywheel,
  recordFlywheelProgress,
} from "./library.service.js";
import { adminSolutionRequestSchema } from "./schemas.js";

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
/** Characters of a sample's reasoning kept in the item's record (the worked solution). */
const REASONING_CHARS = 20_000;

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
  const sources = new Set(agreeing.map((c) => (c.program ?? "").replace(/\s+/g, " ").trim()));
  const first = agreeing[0];
  if (!first?.program || agreeing.length < 2 || sources.size < 2) return { reason: "no_agreement" };
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
      },
      signal,
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

function candidatesOf(samples: readonly SolveSample[]): Candidate[] {
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
async function deposit(deps: AdminDeps, problem: string, accepted: Accepted) {
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

/** A refusal that is about the candidate (a 4xx or a bad shape), not a failure of the services. */
function refusalCode(err: unknown): string | null {
  if (err instanceof ZodError) return "invalid_candidate";
  if (err instanceof DomainError && err.status < 500 && err.status !== 429) return err.code;
  return null;
}

/** Puts a running item back in the queue (the GPU node failed or the worker is stopping). */
async function requeue(deps: AdminDeps, id: string): Promise<void> {
  await deps.db
    .update(flywheelQueue)
    .set({ status: "queued", result: null, updatedAt: new Date(deps.clock.now()) })
    .where(and(eq(flywheelQueue.id, id), eq(flywheelQueue.status, "running")));
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
    await step({ step: "depositing" });
    try {
      const deposited = await deposit(deps, item.problem, verdict.accepted);
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
    if (signal?.aborted || item.attempts < MAX_ATTEMPTS) {
      await requeue(deps, item.id);
      throw err;
    }
    return close("rejected", { reason: "gpu_failed", error: failed });
  }
}

function omitSolution(accepted: Accepted): Omit<Accepted, "solution"> {
  const { solution: _solution, ...rest } = accepted;
  return rest;
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

export interface FlywheelWorker {
  /** Items finished by this worker. */
  readonly processed: number;
  /** Aborted when the worker stops; its idle waits and GPU calls listen to it. */
  readonly signal: AbortSignal;
  /** Stops after aborting the item in progress (it goes back to the queue). */
  stop(): Promise<void>;
}

/**
 * Resolves after `ms`, or at once when `signal` aborts. The abort listener is removed when the
 * timer fires: an idle worker waits every few seconds, and listeners left behind would pile up
 * on its one signal (Node warns past 10: MaxListenersExceededWarning).
 */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Runs the worker loop until stopped: claim, process, and poll every `idleMs` when idle; after a
 * failure (the GPU node down, say) it waits `failureBackoffMs` before the next claim.
 */
export function startFlywheelWorker(
  deps: AdminDeps,
  options: { budget?: FlywheelBudget; idleMs?: number; failureBackoffMs?: number; logger?: Logger } = {},
): FlywheelWorker {
  const stopping = new AbortController();
  const idleMs = options.idleMs ?? 2_000;
  const failureBackoffMs = options.failureBackoffMs ?? 15_000;
  let processed = 0;
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      let waitMs = idleMs;
      try {
        const item = await runFlywheelOnce(deps, options.budget, {
          signal: stopping.signal,
          ...(options.logger ? { logger: options.logger } : {}),
        });
        if (item) {
          processed++;
          continue;
        }
      } catch (err) {
        if (stopping.signal.aborted) break;
        options.logger?.error("flywheel item failed", {
          error: err instanceof Error ? err.message : String(err),
        });
        waitMs = failureBackoffMs;
      }
      await pause(waitMs, stopping.signal);
    }
  })();
  return {
    get processed() {
      return processed;
    },
    signal: stopping.signal,
    async stop() {
      stopping.abort(new Error("the flywheel worker is stopping"));
      await loop;
    },
  };
}

// --- admin operations ---

/** Queue depth, items done and what they cost, from the queue table. */
export async function flywheelProgress(deps: Pick<AdminDeps, "db">) {
  const rows = await deps.db
    .select({
      status: flywheelQueue.status,
      items: sql<number>`count(*)`,
      tokensIn: sql<number>`coalesce(sum(json_extract(${flywheelQueue.cost}, '$.tokensIn')), 0)`,
      tokensOut: sql<number>`coalesce(sum(json_extract(${flywheelQueue.cost}, '$.tokensOut')), 0)`,
      gpuMs: sql<number>`coalesce(sum(json_extract(${flywheelQueue.cost}, '$.gpuMs')), 0)`,
      energyWh: sql<number | null>`sum(json_extract(${flywheelQueue.cost}, '$.energyWh'))`,
    })
    .from(flywheelQueue)
    .groupBy(flywheelQueue.status);
  const count = (s: FlywheelStatus) => Number(rows.find((r) => r.status === s)?.items ?? 0);
  const sum = (k: "tokensIn" | "tokensOut" | "gpuMs") => rows.reduce((n, r) => n + Number(r[k]), 0);
  const energy = rows.filter((r) => r.energyWh !== null);
  return {
    queued: count("queued"),
    running: count("running"),
    accepted: count("accepted"),
    rejected: count("rejected"),
    done: count("accepted") + count("rejected"),
    tokensIn: sum("tokensIn"),
    tokensOut: sum("tokensOut"),
    gpuMs: Math.round(sum("gpuMs")),
    energyWh: energy.length ? energy.reduce((n, r) => n + Number(r.energyWh), 0) : null,
  };
}

/**
 * Whether the flywheel is on, the queue's progress, the items being worked on now with the step
 * each is at, and the items (optionally of one status); candidates are counted, not listed.
 */
export async function listFlywheelItems(
  deps: Pick<AdminDeps, "db" | "config">,
  options: { status?: FlywheelStatus; limit?: number },
) {
  const [progress, items, running] = await Promise.all([
    flywheelProgress(deps),
    listFlywheel(deps.db, options),
    listFlywheel(deps.db, { status: "running", limit: 500 }),
  ]);
  const brief = (item: FlywheelItem) => {
    if (!item.result || !Array.isArray(item.result.candidates)) return item;
    const { candidates, ...rest } = item.result;
    return { ...item, result: { ...rest, candidateCount: candidates.length } };
  };
  return {
    enabled: deps.config.flywheel.enabled,
    setting: deps.config.flywheel.setting,
    progress,
    running: running.map((item) => ({
      id: item.id,
      problem: item.problem,
      attempts: item.attempts,
      progress: (item.result as { progress?: FlywheelProgress } | null)?.progress ?? null,
      updatedAt: item.updatedAt,
    })),
    items: items.map(brief),
  };
}

export async function getFlywheelItem(deps: Pick<AdminDeps, "db">, id: string): Promise<FlywheelItem> {
  const [row] = await deps.db.select().from(flywheelQueue).where(eq(flywheelQueue.id, id));
  if (!row) throw notFound("flywheel_item_not_found", "No flywheel item with this id.");
  return row;
}

/** Open flywheel items one API key may have caused at once, so that one key cannot flood the worker. */
export const FLYWHEEL_OPEN_PER_KEY = 20;

/**
 * Queues the problem of an unsure answer for the key that asked, unless it is already open or
 * the key already caused `cap` open items (counted through the key's logged queries, by
 * fingerprint); then nothing new is queued and the answer stands. Returns whether it was queued.
 */
export async function enqueueForKey(
  db: Database,
  input: { keyId: string | null; problem: string; fingerprint: string },
  cap = FLYWHEEL_OPEN_PER_KEY,
): Promise<boolean> {
  const open = inArray(flywheelQueue.status, ["queued", "running"]);
  const [already] = await db
    .select({ id: flywheelQueue.id })
    .from(flywheelQueue)
    .where(and(open, eq(flywheelQueue.fingerprint, input.fingerprint)));
  if (already) return false;
  const asked = db
    .selectDistinct({ fingerprint: queries.fingerprint })
    .from(queries)
    .where(input.keyId === null ? isNull(queries.keyId) : eq(queries.keyId, input.keyId));
  const [count] = await db
    .select({ n: sql<number>`count(*)` })
    .from(flywheelQueue)
    .where(and(open, inArray(flywheelQueue.fingerprint, asked)));
  if ((count?.n ?? 0) >= cap) return false;
  return (await enqueueFlywheel(db, { problem: input.problem, fingerprint: input.fingerprint })).created;
}

/**
 * Queues a problem (admins may attach the reference answer); an open item gets the reference.
 * 409 `flywheel_disabled` when the flywheel is switched off: nothing would work on it.
 */
export async function enqueueProblem(
  deps: Pick<AdminDeps, "db" | "config">,
  input: { problem: string; referenceAnswer?: string | undefined },
) {
  if (!deps.config.flywheel.enabled)
    throw conflict(
      "flywheel_disabled",
      `The flywheel is off on this edge (KVGRAFT_FLYWHEEL=${deps.config.flywheel.setting}); set KVGRAFT_FLYWHEEL=on to queue problems.`,
      { setting: deps.config.flywheel.setting },
    );
  const fingerprint = await sha256Hex(normalizeProblem(input.problem));
  const { item, created } = await enqueueFlywheel(deps.db, {
    problem: input.problem,
    fingerprint,
    referenceAnswer: input.referenceAnswer ?? null,
  });
  if (created || input.referenceAnswer === undefined) return { item, created };
  return { item: await setReference(deps, item.id, input.referenceAnswer), created };
}

async function setReference(deps: Pick<AdminDeps, "db">, id: string, reference: string) {
  const [row] = await deps.db
    .update(flywheelQueue)
    .set({ referenceAnswer: reference, updatedAt: new Date() })
    .where(eq(flywheelQueue.id, id))
    .returning();
  if (!row) throw notFound("flywheel_item_not_found", "No flywheel item with this id.");
  return row;
}

/** Moves an item from one status to another, or fails with 409 naming the status it has. */
async function transition(deps: Pick<AdminDeps, "db">, id: string, from: FlywheelStatus, to: FlywheelStatus) {
  const [row] = await deps.db
    .update(flywheelQueue)
    .set({ status: to, updatedAt: new Date() })
    .where(and(eq(flywheelQueue.id, id), eq(flywheelQueue.status, from)))
    .returning();
  if (row) return row;
  const current = await getFlywheelItem(deps, id);
  throw conflict("flywheel_item_state", `The item is ${current.status}; this needs it ${from}.`, {
    status: current.status,
  });
}

/**
 * An admin's acceptance. A queued item takes the reference answer for the worker to judge
 * against. A rejected item that has candidates is judged again against the reference (default:
 * its majority answer, which the admin thereby vouches for) and, on a match, deposited: 422
 * `no_matching_candidate` when none matches, the deposit's own 422 when its program fails the
 * sandbox check; the item stays rejected then and no block is made.
 */
export async function acceptFlywheelItem(
  deps: AdminDeps,
  id: string,
  input: { referenceAnswer?: string | undefined },
): Promise<FlywheelItem> {
  const item = await getFlywheelItem(deps, id);
  if (item.status === "queued") {
    if (input.referenceAnswer === undefined)
      throw conflict("flywheel_item_unsolved", "A queued item is accepted only with a reference answer.", {
        status: item.status,
      });
    return setReference(deps, id, input.referenceAnswer);
  }
  const result = (item.result ?? {}) as { candidates?: Candidate[]; answer?: string | null };
  if (item.status !== "rejected" || !result.candidates?.length)
    throw conflict("flywheel_item_state", `The item is ${item.status} and has no candidates to accept.`, {
      status: item.status,
    });
  const reference = input.referenceAnswer ?? item.referenceAnswer ?? result.answer ?? null;
  if (reference === null)
    throw unprocessable("no_matching_candidate", "The item has no majority answer; give a reference answer.");
  const verdict = judge(result.candidates, reference);
  if ("reason" in verdict)
    throw unprocessable("no_matching_candidate", "No candidate of this item matches the reference answer.", {
      reference,
    });
  await transition(deps, id, "rejected", "running");
  try {
    const deposited = await deposit(deps, item.problem, verdict.accepted);
    return await finishFlywheel(deps.db, id, {
      status: "accepted",
      cost: item.cost,
      result: {
        ...result,
        reference,
        acceptedBy: "admin",
        accepted: omitSolution(verdict.accepted),
        ...deposited,
      },
    });
  } catch (err) {
    await transition(deps, id, "running", "rejected").catch(() => undefined);
    throw err;
  }
}

/** An admin's rejection of a queued item (a rejected one stays as it is); no block is made. */
export async function rejectFlywheelItem(
  deps: Pick<AdminDeps, "db">,
  id: string,
  input: { note?: string | undefined },
): Promise<FlywheelItem> {
  const item = await getFlywheelItem(deps, id);
  if (item.status === "rejected") return item;
  if (item.status !== "queued")
    throw conflict("flywheel_item_state", `The item is ${item.status}; only queued items can be rejected.`, {
      status: item.status,
    });
  const [row] = await deps.db
    .update(flywheelQueue)
    .set({
      status: "rejected",
      result: { reason: "admin_rejected", ...(input.note ? { note: input.note } : {}) },
      updatedAt: new Date(),
    })
    .where(and(eq(flywheelQueue.id, id), eq(flywheelQueue.status, "queued")))
    .returning();
  if (!row) return rejectFlywheelItem(deps, id, input);
  return row;
}

/** JSON lines on stderr: stdout of `kvgraft start --json` carries only its summary. */
const stderrLogger: Logger = {
  error: (message, fields) => console.error(JSON.stringify({ level: "error", message, ...fields })),
  info: (message, fields) => console.error(JSON.stringify({ level: "info", message, ...fields })),
};

/**
 * Runs a worker next to a Node edge (npm start) when the edge's configuration has the flywheel
 * on (polling the queue every `KVGRAFT_FLYWHEEL_IDLE_MS` while idle); closing the edge stops the
 * worker first. With the flywheel off the edge is returned as it is.
 */
export function withFlywheelWorker<
  E extends Pick<AdminDeps, "db" | "gpu" | "config"> & { close(): Promise<void> },
>(edge: E, options: { budget?: FlywheelBudget; logger?: Logger } = {}): E {
  if (!edge.config.flywheel.enabled) return edge;
  const worker = startFlywheelWorker(
    { db: edge.db, gpu: edge.gpu, config: edge.config, clock: systemClock },
    { logger: stderrLogger, idleMs: edge.config.flywheel.idleMs, ...options },
  );
  const close = edge.close.bind(edge);
  return Object.assign(edge, {
    close: async () => {
      await worker.stop();
      await close();
    },
  });
}
