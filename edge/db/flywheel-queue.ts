/**
 * The flywheel queue: problems the model was unsure of, waiting for a heavier solve. At most one
 * open (queued or running) item per fingerprint; a claim is a single UPDATE, so concurrent
 * workers never get the same item.
 */
import { and, asc, eq, inArray, lt, or, sql } from "drizzle-orm";
import { conflict, notFound } from "../../shared/errors.js";
import type { Database } from "./database.js";
import { newId } from "./ids.js";
import { type FlywheelStatus, flywheelQueue } from "./schema.js";

export type FlywheelItem = typeof flywheelQueue.$inferSelect;

/** An unsure problem to queue; an admin may attach the reference answer to verify against. */
export interface FlywheelInput {
  problem: string;
  fingerprint: string;
  referenceAnswer?: string | null;
}

/** Queues a problem; if its fingerprint is already open, returns that item with `created: false`. */
export async function enqueueFlywheel(
  db: Database,
  input: FlywheelInput,
): Promise<{ item: FlywheelItem; created: boolean }> {
  // The open item may finish between a refused insert and the lookup; then the insert succeeds.
  for (let attempt = 0; attempt < 3; attempt++) {
    const [inserted] = await db
      .insert(flywheelQueue)
      .values({
        id: newId("fly"),
        problem: input.problem,
        fingerprint: input.fingerprint,
        referenceAnswer: input.referenceAnswer ?? null,
      })
      .onConflictDoNothing()
      .returning();
    if (inserted) return { item: inserted, created: true };
    const [open] = await db
      .select()
      .from(flywheelQueue)
      .where(
        and(
          eq(flywheelQueue.fingerprint, input.fingerprint),
          inArray(flywheelQueue.status, ["queued", "running"]),
        ),
      );
    if (open) return { item: open, created: false };
  }
  throw conflict("flywheel_enqueue_contended", "The queue item changed while enqueuing; retry.");
}

/** Options for a claim; `reclaimAfterMs` also hands out running items whose worker went silent. */
export interface ClaimOptions {
  now?: Date;
  reclaimAfterMs?: number;
}

/** Claims the oldest claimable item (marks it running, counts the attempt), or null if none. */
export async function claimNextFlywheel(
  db: Database,
  options: ClaimOptions = {},
): Promise<FlywheelItem | null> {
  const now = options.now ?? new Date();
  const queued = eq(flywheelQueue.status, "queued");
  const claimable =
    options.reclaimAfterMs === undefined
      ? queued
      : or(
          queued,
          and(
            eq(flywheelQueue.status, "running"),
            lt(flywheelQueue.updatedAt, new Date(now.getTime() - options.reclaimAfterMs)),
          ),
        );
  const oldest = db
    .select({ id: flywheelQueue.id })
    .from(flywheelQueue)
    .where(claimable)
    .orderBy(asc(flywheelQueue.id))
    .limit(1);
  // The condition is repeated on the row itself so a claim never takes an item another worker
  // took between the subquery and the write, whatever the isolation of the backend.
  const [claimed] = await db
    .update(flywheelQueue)
    .set({ status: "running", attempts: sql`${flywheelQueue.attempts} + 1`, updatedAt: now })
    .where(and(inArray(flywheelQueue.id, oldest), claimable))
    .returning();
  return claimed ?? null;
}

/** Where a running item is, shown by the admin flywheel route while the worker is on it. */
export interface FlywheelProgress {
  step: "library_check" | "baseline" | "heavy" | "judging" | "depositing";
  /** Samples of this step's solve finished so far, and its total (solve steps only). */
  sample?: number;
  samples?: number;
  at: string;
}

/**
 * Records a running item's progress in its `result` (replaced by the outcome when it finishes);
 * the write also refreshes `updated_at`, so an item that makes progress is never reclaimed.
 */
export async function recordFlywheelProgress(
  db: Database,
  id: string,
  progress: FlywheelProgress,
  now = new Date(),
): Promise<void> {
  await db
    .update(flywheelQueue)
    .set({ result: { progress }, updatedAt: now })
    .where(and(eq(flywheelQueue.id, id), eq(flywheelQueue.status, "running")));
}

/** The outcome of a heavier solve. */
export interface FlywheelOutcome {
  status: Extract<FlywheelStatus, "accepted" | "rejected">;
  cost?: Record<string, unknown> | null;
  result?: Record<string, unknown> | null;
}

/** Closes a running item as accepted or rejected. */
export async function finishFlywheel(
  db: Database,
  id: string,
  outcome: FlywheelOutcome,
): Promise<FlywheelItem> {
  const [row] = await db
    .update(flywheelQueue)
    .set({
      status: outcome.status,
      cost: outcome.cost ?? null,
      result: outcome.result ?? null,
      updatedAt: new Date(),
    })
    .where(and(eq(flywheelQueue.id, id), eq(flywheelQueue.status, "running")))
    .returning();
  if (row) return row;
  const [existing] = await db.select().from(flywheelQueue).where(eq(flywheelQueue.id, id));
  if (!existing) throw notFound("flywheel_item_not_found", "No flywheel item with this id.");
  throw conflict("flywheel_item_not_running", "Only a running flywheel item can be finished.", {
    status: existing.status,
  });
}

/** Queue items in creation order, optionally of one status; `limit` is clamped to 1..500. */
export async function listFlywheel(
  db: Database,
  options: { status?: FlywheelStatus; limit?: number } = {},
): Promise<FlywheelItem[]> {
  const limit = Math.min(Math.max(Math.trunc(options.limit ?? 100), 1), 500);
  return db
    .select()
    .from(flywheelQueue)
    .where(options.status ? eq(flywheelQueue.status, options.status) : undefined)
    .orderBy(asc(flywheelQueue.id))
    .limit(limit);
}
