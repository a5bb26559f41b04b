/**
 * Block placement over several GPU nodes. Pure functions decide (which nodes are live, where a
 * block should live, which replica a graft goes to, what a rebalance must copy or drop); a few
 * edge/db/replicas.ts reads and writes the `block_replicas` table that records where copies really are.
 *
 * - A node is live when it is marked up, its last heartbeat is recent, and no call to it failed
 *   since that heartbeat.
 * - A block lives on the R live nodes with the highest rendezvous score for its id among nodes with
 *   the block's fingerprints (model SHA-256 and engine id): a block never goes to any other node.
 * - A graft goes to a live holder where the block is hot, else warm, else any live holder (which
 *   restores it from disk), ties broken by rendezvous rank.
 */
import { rendezvousPick, rendezvousRank } from "../../shared/rendezvous.js";

/** What placement needs to know about one node. */
export interface NodeView {
  id: string;
  url: string;
  /** The model file's SHA-256 ("" when not known yet). */
  modelFingerprint: string;
  /** The engine fingerprint's id ("" when not known yet). */
  engineFingerprint: string;
  live: boolean;
  /** Block ids resident in a slot / in RAM, from the node's last heartbeat. */
  hot: readonly string[];
  warm: readonly string[];
  /** Queue depth from the last heartbeat (lower is less busy). */
  queueDepth: number;
}

/** The fingerprints a block needs in a node. */
export interface Fingerprints {
  modelFingerprint: string;
  engineFingerprint: string;
}

export const fingerprintGroup = (f: Fingerprints): string => `${f.modelFingerprint}/${f.engineFingerprint}`;

const sameFingerprints = (a: Fingerprints, b: Fingerprints) =>
  a.modelFingerprint === b.modelFingerprint && a.engineFingerprint === b.engineFingerprint;

/** Whether a registered node counts as live at `nowMs`. */
export function isLive(
  node: { status: string; lastHeartbeatAt: Date | number; suspectSinceMs?: number | undefined },
  nowMs: number,
  timing: { heartbeatMs: number; downAfter: number },
): boolean {
  const last =
    typeof node.lastHeartbeatAt === "number" ? node.lastHeartbeatAt : node.lastHeartbeatAt.getTime();
  if (node.status !== "up") return false;
  if (nowMs - last > timing.heartbeatMs * timing.downAfter) return false;
  // A call failed after the last heartbeat: wait for the next one.
  if (node.suspectSinceMs !== undefined && node.suspectSinceMs >= last) return false;
  return true;
}

/** The live nodes a block with these fingerprints should live on, best first. */
export function desiredNodes(
  blockId: string,
  f: Fingerprints,
  nodes: readonly NodeView[],
  r: number,
): string[] {
  const eligible = nodes.filter((n) => n.live && sameFingerprints(n, f)).map((n) => n.id);
  return rendezvousPick(blockId, eligible, r);
}

export type RouteTier = "hot" | "warm" | "cold";

/** Where a graft of `blockId` may go, best first: live holders by tier, then rendezvous rank. */
export function routeCandidates(
  blockId: string,
  holders: ReadonlySet<string>,
  nodes: readonly NodeView[],
): { id: string; tier: RouteTier }[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const live = [...holders].filter((id) => byId.get(id)?.live);
  const rank = rendezvousRank(blockId, live);
  const tierOf = (id: string): RouteTier => {
    const n = byId.get(id) as NodeView;
    return n.hot.includes(blockId) ? "hot" : n.warm.includes(blockId) ? "warm" : "cold";
  };
  const order = { hot: 0, warm: 1, cold: 2 } as const;
  return rank
    .map((id, i) => ({ id, tier: tierOf(id), i }))
    .sort((a, b) => order[a.tier] - order[b.tier] || a.i - b.i)
    .map(({ id, tier }) => ({ id, tier }));
}

/**
 * Graft candidates with load balanced among the fast ones: a node holding the block hot or warm
 * (a restore of milliseconds) with fewer calls open goes first; cold holders stay last, and
 * equals keep their order (hot before warm, then rendezvous rank). Without it every graft of a
 * block goes to the same holder however busy it is, while the other holder has it warm too.
 */
export function preferIdle<T extends { id: string; tier: RouteTier }>(
  candidates: readonly T[],
  inFlight: (nodeId: string) => number,
): T[] {
  return candidates
    .map((c, i) => ({ c, i, slow: c.tier === "cold" ? 1 : 0, load: inFlight(c.id) }))
    .sort((a, b) => a.slow - b.slow || a.load - b.load || a.i - b.i)
    .map(({ c }) => c);
}

/** The fingerprint group most live nodes share (where new deposits go); null when none is live. */
export function majorityGroup(nodes: readonly NodeView[]): Fingerprints | null {
  const counts = new Map<string, { f: Fingerprints; n: number }>();
  for (const node of nodes) {
    if (!node.live || !node.modelFingerprint) continue;
    const key = fingerprintGroup(node);
    const entry = counts.get(key) ?? { f: node, n: 0 };
    entry.n++;
    counts.set(key, entry);
  }
  const best = [...counts.entries()].sort((a, b) => b[1].n - a[1].n || (a[0] < b[0] ? -1 : 1))[0];
  return best
    ? { modelFingerprint: best[1].f.modelFingerprint, engineFingerprint: best[1].f.engineFingerprint }
    : null;
}

/** One step of a rebalance. */
export type RebalanceAction =
  | { kind: "copy"; blockId: string; from: string; to: string }
  | { kind: "drop"; blockId: string; node: string };

/** A block as the rebalancer sees it: its fingerprints and the live nodes that hold it now. */
export interface BlockHoldings extends Fingerprints {
  blockId: string;
  holders: ReadonlySet<string>;
}

/**
 * What a rebalance must do so every block is on its desired nodes: a copy to each desired node
 * that lacks it (from the best-ranked live holder), and, for blocks whose desired nodes already
 * all hold it, a drop of each copy on a live node outside that set. A block no live node holds is
 * left alone (`unavailable`), as is any node with other fingerprints (it never holds the block).
 */
export function planRebalance(
  holdings: readonly BlockHoldings[],
  nodes: readonly NodeView[],
  r: number,
): { actions: RebalanceAction[]; unavailable: string[] } {
  const actions: RebalanceAction[] = [];
  const unavailable: string[] = [];
  const liveIds = new Set(nodes.filter((n) => n.live).map((n) => n.id));
  for (const b of holdings) {
    const desired = desiredNodes(b.blockId, b, nodes, r);
    const holders = [...b.holders].filter((id) => liveIds.has(id));
    if (holders.length === 0) {
      unavailable.push(b.blockId);
      continue;
    }
    const source = rendezvousRank(b.blockId, holders)[0] as string;
    const missing = desired.filter((id) => !b.holders.has(id));
    for (const to of missing) actions.push({ kind: "copy", blockId: b.blockId, from: source, to });
    if (missing.length === 0 && desired.length > 0)
      for (const node of holders)
        if (!desired.includes(node)) actions.push({ kind: "drop", blockId: b.blockId, node });
  }
  return { actions, unavailable };
}
