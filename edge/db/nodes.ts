/**
 * The GPU node registry: nodes register and heartbeat with their fingerprints and capacity; the
 * edge marks them down when heartbeats stop and routes only to nodes that are up.
 */
import { asc, eq, sql } from "drizzle-orm";
import type { SQLiteUpdateSetSource } from "drizzle-orm/sqlite-core";
import { notFound } from "../../shared/errors.js";
import type { Database } from "./database.js";
import { type FingerprintValue, fingerprintKey } from "./fingerprint.js";
import { gpuNodes, type NodeStatus } from "./schema.js";

export type GpuNode = typeof gpuNodes.$inferSelect;

/** What a node reports when it registers or heartbeats. */
export interface NodeInput {
  id: string;
  url: string;
  modelFingerprint: FingerprintValue;
  engineFingerprint: FingerprintValue;
  /** Slots and tiers (VRAM/RAM/disk) with their sizes. */
  capacity: Record<string, unknown>;
  health: Record<string, unknown>;
}

/** Registers a node or records its heartbeat: it is up, heard from now, with no missed beats. */
export async function upsertNode(db: Database, input: NodeInput, now: Date = new Date()): Promise<GpuNode> {
  const fields = {
    url: input.url,
    modelFingerprint: fingerprintKey(input.modelFingerprint),
    engineFingerprint: fingerprintKey(input.engineFingerprint),
    capacity: input.capacity,
    health: input.health,
    status: "up" as const,
    lastHeartbeatAt: now,
    missedHeartbeats: 0,
  };
  const [row] = await db
    .insert(gpuNodes)
    .values({ id: input.id, ...fields })
    .onConflictDoUpdate({ target: gpuNodes.id, set: fields })
    .returning();
  if (!row) throw new Error("node upsert returned no row");
  return row;
}

/** Marks a node down (it stopped answering); routing skips it until it is up again. */
export async function markNodeDown(db: Database, id: string): Promise<GpuNode> {
  return updateNode(db, id, { status: "down" });
}

/** Marks a node up after a successful health check. */
export async function markNodeUp(db: Database, id: string, now: Date = new Date()): Promise<GpuNode> {
  return updateNode(db, id, { status: "up", missedHeartbeats: 0, lastHeartbeatAt: now });
}

/** Counts a missed heartbeat; the node goes down once `downAfter` beats in a row are missed. */
export async function recordMissedHeartbeat(db: Database, id: string, downAfter: number): Promise<GpuNode> {
  const missed = sql`${gpuNodes.missedHeartbeats} + 1`;
  return updateNode(db, id, {
    missedHeartbeats: missed,
    status: sql`CASE WHEN ${missed} >= ${downAfter} THEN 'down' ELSE ${gpuNodes.status} END`,
  });
}

/** Registered nodes, optionally only those with one status. */
export async function listNodes(db: Database, options: { status?: NodeStatus } = {}): Promise<GpuNode[]> {
  return db
    .select()
    .from(gpuNodes)
    .where(options.status ? eq(gpuNodes.status, options.status) : undefined)
    .orderBy(asc(gpuNodes.id));
}

async function updateNode(
  db: Database,
  id: string,
  set: SQLiteUpdateSetSource<typeof gpuNodes>,
): Promise<GpuNode> {
  const [row] = await db.update(gpuNodes).set(set).where(eq(gpuNodes.id, id)).returning();
  if (!row) throw notFound("node_not_found", "No GPU node with this id.");
  return row;
}

/** One registered node, or null. */
export async function getNode(db: Database, id: string): Promise<GpuNode | null> {
  const [row] = await db.select().from(gpuNodes).where(eq(gpuNodes.id, id));
  return row ?? null;
}
