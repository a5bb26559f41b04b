/**
 * The flywheel's admin operations and the solve path's enqueue: queue progress and items, queueing
 * a problem (per-key cap for unsure answers, a reference answer for admins), and an admin's
 * acceptance (judged again against a reference, then deposited) or rejection of an item.
 */
import { conflict, notFound, unprocessable } from "../../shared/errors.js";
import { sha256Hex } from "../../shared/hash.js";
import { normalizeProblem } from "../../shared/normalize.js";
import {
  enqueueFlywheel,
  type FlywheelItem,
  type FlywheelProgress,
  finishFlywheel,
  flywheelTotals,
  getFlywheel,
  listFlywheel,
  setFlywheelReference,
  transitionFlywheel,
} from "../db/flywheel-queue.js";
import type { FlywheelStatus } from "../db/schema.js";
import type { AdminDeps } from "./admin.service.js";
import { type Candidate, depositAccepted, judge, omitSolution } from "./flywheel-judge.js";

/** Queue depth, items done and what they cost, from the queue table. */
export async function flywheelProgress(deps: Pick<AdminDeps, "db">) {
  const rows = await flywheelTotals(deps.db);
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

/** One item by id; 404 `flywheel_item_not_found`. */
export async function getFlywheelItem(deps: Pick<AdminDeps, "db">, id: string): Promise<FlywheelItem> {
  const row = await getFlywheel(deps.db, id);
  if (!row) throw notFound("flywheel_item_not_found", "No flywheel item with this id.");
  return row;
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
  const row = await setFlywheelReference(deps.db, id, reference);
  if (!row) throw notFound("flywheel_item_not_found", "No flywheel item with this id.");
  return row;
}

/** Moves an item from one status to another, or fails with 409 naming the status it has. */
async function transition(deps: Pick<AdminDeps, "db">, id: string, from: FlywheelStatus, to: FlywheelStatus) {
  const row = await transitionFlywheel(deps.db, id, from, to);
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
    const deposited = await depositAccepted(deps, item.problem, verdict.accepted);
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
  const row = await transitionFlywheel(deps.db, id, "queued", "rejected", {
    reason: "admin_rejected",
    ...(input.note ? { note: input.note } : {}),
  });
  if (!row) return rejectFlywheelItem(deps, id, input);
  return row;
}
