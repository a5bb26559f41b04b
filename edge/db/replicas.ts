/**
 * The `block_replicas` table, which records where copies of blocks really are, and the block
 * fields placement reads (fingerprints, state, origin node).
 */
import { and, eq, inArray } from "drizzle-orm";
import type { Database } from "./database.js";
import { blockReplicas, blocks } from "./schema.js";

/** The fingerprints a block needs in a node (model SHA-256 and engine id). */
export interface BlockFingerprints {
  modelFingerprint: string;
  engineFingerprint: string;
}

/** Node ids recorded as holding each of `blockIds` (the block's origin node included). */
export async function recordedHolders(
  db: Database,
  blockIds: readonly string[],
): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>(blockIds.map((id) => [id, new Set<string>()]));
  if (blockIds.length === 0) return out;
  const ids = [...blockIds];
  const rows = await db
    .select({ blockSha256: blockReplicas.blockSha256, nodeId: blockReplicas.nodeId })
    .from(blockReplicas)
    .where(inArray(blockReplicas.blockSha256, ids));
  for (const row of rows) out.get(row.blockSha256)?.add(row.nodeId);
  // Blocks registered before replicas were recorded live on the node that made them.
  const origins = await db
    .select({ sha256: blocks.sha256, nodeId: blocks.nodeId })
    .from(blocks)
    .where(inArray(blocks.sha256, ids));
  for (const row of origins) {
    const set = out.get(row.sha256);
    if (set && set.size === 0 && row.nodeId) set.add(row.nodeId);
  }
  return out;
}

/** Records that `nodeId` holds the block (idempotent). */
export async function addReplica(db: Database, blockSha256: string, nodeId: string): Promise<void> {
  await db.insert(blockReplicas).values({ blockSha256, nodeId }).onConflictDoNothing();
}

/** Records that `nodeId` no longer holds the block. */
export async function removeReplica(db: Database, blockSha256: string, nodeId: string): Promise<void> {
  await db
    .delete(blockReplicas)
    .where(and(eq(blockReplicas.blockSha256, blockSha256), eq(blockReplicas.nodeId, nodeId)));
}

/** Removes the records that `nodeId` holds any of `blockSha256s`; returns how many there were. */
export async function removeNodeReplicas(
  db: Database,
  nodeId: string,
  blockSha256s: string[],
): Promise<number> {
  let removed = 0;
  // In slices: SQLite binds at most 32,766 parameters a statement.
  for (let i = 0; i < blockSha256s.length; i += 500) {
    const gone = await db
      .delete(blockReplicas)
      .where(
        and(
          eq(blockReplicas.nodeId, nodeId),
          inArray(blockReplicas.blockSha256, blockSha256s.slice(i, i + 500)),
        ),
      )
      .returning({ sha: blockReplicas.blockSha256 });
    removed += gone.length;
  }
  return removed;
}

/** Ready blocks with their fingerprints (what the rebalancer places). */
export async function readyBlocks(db: Database): Promise<(BlockFingerprints & { blockId: string })[]> {
  return db
    .select({
      blockId: blocks.sha256,
      modelFingerprint: blocks.modelFingerprint,
      engineFingerprint: blocks.engineFingerprint,
    })
    .from(blocks)
    .where(eq(blocks.state, "ready"));
}

/** One block's row with its fingerprints, or null. */
export async function blockFingerprints(
  db: Database,
  blockId: string,
): Promise<(BlockFingerprints & { state: string; nodeId: string | null }) | null> {
  const [row] = await db
    .select({
      modelFingerprint: blocks.modelFingerprint,
      engineFingerprint: blocks.engineFingerprint,
      state: blocks.state,
      nodeId: blocks.nodeId,
    })
    .from(blocks)
    .where(eq(blocks.sha256, blockId));
  return row ?? null;
}
