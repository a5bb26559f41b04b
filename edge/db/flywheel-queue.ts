/**
 * The flywheel queue: problems the model was unsure of, waiting for a heavier solve. At most one
 * open (queued or running) item per fingerprint; a claim is a single UPDATE, so concurrent
 * workers never get the same item.
 */
import { and, asc, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import { conflict, notFound } from "../../shared/errors.js";
import type { Database } from "./database.js";
import { newId } from "./ids.js";
import { type FlywheelStatus, flywheelQueue, queries } from "./schema.js";

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
  step: "library_check" | "baseline" | "heavy" | "judging" | "checking" | "depositing";
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

/** One item by id, or null. */
export async function getFlywheel(db: Database, id: string): Promise<FlywheelItem | null> {
  const [row] = await db.select().from(flywheelQueue).where(eq(flywheelQueue.id, id));
  return row ?? null;
}

/** Puts a running item back in the queue (its worker failed or is stopping), its progress cleared. */
export async function requeueFlywheel(
  db: Database,
  id: string,
  now: Date,
  options: { refundAttempt?: boolean } = {},
): Promise<void> {
  await db
    .update(flywheelQueue)
    .set({
      status: "queued",
      result: null,
      updatedAt: now,
      // A claim that came to nothing through no fault of the item does not count.
      ...(options.refundAttempt ? { attempts: sql`max(${flywheelQueue.attempts} - 1, 0)` } : {}),
    })
    .where(and(eq(flywheelQueue.id, id), eq(flywheelQueue.status, "running")));
}

/** Moves an item from one status to another; null when it is not in `from` (or does not exist). */
export async function transitionFlywheel(
  db: Database,
  id: string,
  from: FlywheelStatus,
  to: FlywheelStatus,
  result?: Record<string, unknown>,
): Promise<FlywheelItem | null> {
  const [row] = await db
    .update(flywheelQueue)
    .set({ status: to, ...(result ? { result } : {}), updatedAt: new Date() })
    .where(and(eq(flywheelQueue.id, id), eq(flywheelQueue.status, from)))
    .returning();
  return row ?? null;
}

/** Sets the reference answer of an item; null when there is no such item. */
export async function setFlywheelReference(
  db: Database,
  id: string,
  reference: string,
): Promise<FlywheelItem | null> {
  const [row] = await db
    .update(flywheelQueue)
    .set({ referenceAnswer: reference, updatedAt: new Date() })
    .where(eq(flywheelQueue.id, id))
    .returning();
  return row ?? null;
}

const openStatus = () => inArray(flywheelQueue.status, ["queued", "running"]);

/** Whether an item of this fingerprint is open (queued or running). */
export async function isFlywheelOpen(db: Database, fingerprint: string): Promise<boolean> {
  const [already] = await db
    .select({ id: flywheelQueue.id })
    .from(flywheelQueue)
    .where(and(openStatus(), eq(flywheelQueue.fingerprint, fingerprint)));
  return already !== undefined;
}

/** Open items whose fingerprint this API key asked about (through its logged queries). */
export async function countOpenFlywheelOfKey(db: Database, keyId: string | null): Promise<number> {
  const asked = db
    .selectDistinct({ fingerprint: queries.fingerprint })
    .from(queries)
    .where(keyId === null ? isNull(queries.keyId) : eq(queries.keyId, keyId));
  const [count] = await db
    .select({ n: sql<number>`count(*)` })
    .from(flywheelQueue)
    .where(and(openStatus(), inArray(flywheelQueue.fingerprint, asked)));
  return count?.n ?? 0;
}

/** Per status: the item count and the summed cost of its items. */
export async function flywheelTotals(db: Database) {
  return db
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
  if (await isFlywheelOpen(db, input.fingerprint)) return false;
  if ((await countOpenFlywheelOfKey(db, input.keyId)) >= cap) return false;
  return (await enqueueFlywheel(db, { problem: input.problem, fingerprint: input.fingerprint })).created;
}
