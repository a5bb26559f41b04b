/**
 * Which nodes a pool call goes to, in order: a graft to a live replica of its block where it is
 * hot, else warm, else any live replica (edge/cluster/placement.ts); a deposit to a live node of the
 * largest fingerprint group; plain generation, sandbox runs and health to the least busy live node.
 */
import { sha256Hex } from "../../shared/hash.js";
import { rendezvousRank } from "../../shared/rendezvous.js";
import type { Database } from "../db/database.js";
import { blockFingerprints, recordedHolders } from "../db/replicas.js";
import type { PoolNode } from "./node-directory.js";
import { majorityGroup, type RouteTier, routeCandidates } from "./placement.js";

/** Live nodes, least busy first; `offset` rotates the order among equals (round-robin). */
export function leastBusy(nodes: readonly PoolNode[], offset: number): string[] {
  const live = nodes.filter((n) => n.live);
  return live
    .map((n, i) => ({ n, k: (i + offset) % Math.max(1, live.length) }))
    .sort((a, b) => a.n.queueDepth - b.n.queueDepth || a.k - b.k)
    .map(({ n }) => n.id);
}

/** The nodes a graft of `blockId` may go to, best first, with the tier each holds it in. */
export async function graftCandidates(
  db: Database,
  blockId: string,
  all: readonly PoolNode[],
): Promise<{ id: string; tier: RouteTier }[]> {
  const info = await blockFingerprints(db, blockId);
  if (!info) {
    // Not in the library: any live node may have it (a pool of one, direct API use).
    return rendezvousRank(
      blockId,
      all.filter((n) => n.live).map((n) => n.id),
    ).map((id) => ({ id, tier: "cold" as const }));
  }
  const holders = (await recordedHolders(db, [blockId])).get(blockId) ?? new Set<string>();
  const candidates = routeCandidates(blockId, holders, all);
  // A pool of one: the configured node is the only place the block can be.
  const only = all.length === 1 && all[0]?.source === "static" ? all[0] : null;
  if (candidates.length === 0 && only?.live) return [{ id: only.id, tier: "cold" }];
  return candidates;
}

/** The nodes a deposit of `text` may go to: live nodes of the largest fingerprint group, by rendezvous rank. */
export async function depositCandidates(text: string, all: readonly PoolNode[]): Promise<string[]> {
  const live = all.filter((n) => n.live);
  const group = majorityGroup(live);
  const eligible = group
    ? live.filter(
        (n) =>
          n.modelFingerprint === group.modelFingerprint && n.engineFingerprint === group.engineFingerprint,
      )
    : live;
  return rendezvousRank(
    await sha256Hex(text),
    eligible.map((n) => n.id),
  );
}
