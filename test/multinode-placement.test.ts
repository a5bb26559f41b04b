/** The pure placement decisions of edge/cluster/placement.ts: liveness, routing order, rebalance plans. */
import { describe, expect, it } from "vitest";
import {
  desiredNodes,
  isLive,
  majorityGroup,
  type NodeView,
  planRebalance,
  preferIdle,
  routeCandidates,
} from "../edge/cluster/placement.js";
import { rendezvousPick, rendezvousRank } from "../shared/rendezvous.js";

const F = { modelFingerprint: "m1", engineFingerprint: "e1" };
const node = (id: string, extra: Partial<NodeView> = {}): NodeView => ({
  id,
  url: `http://${id}`,
  ...F,
  live: true,
  hot: [],
  warm: [],
  queueDepth: 0,
  ...extra,
});
const BLOCK = "a".repeat(64);

describe("placement", () => {
  it("a node is live while up, heard from recently, and not failed since its last heartbeat", () => {
    const timing = { heartbeatMs: 1000, downAfter: 3 };
    expect(isLive({ status: "up", lastHeartbeatAt: 10_000 }, 12_000, timing)).toBe(true);
    expect(isLive({ status: "up", lastHeartbeatAt: 10_000 }, 13_001, timing)).toBe(false);
    expect(isLive({ status: "down", lastHeartbeatAt: 10_000 }, 10_001, timing)).toBe(false);
    expect(isLive({ status: "up", lastHeartbeatAt: 10_000, suspectSinceMs: 10_500 }, 11_000, timing)).toBe(
      false,
    );
    expect(isLive({ status: "up", lastHeartbeatAt: 11_000, suspectSinceMs: 10_500 }, 11_100, timing)).toBe(
      true,
    );
  });

  it("desired nodes: rendezvous over live nodes with the block's fingerprints only", () => {
    const nodes = [node("a"), node("b"), node("c", { live: false }), node("d", { modelFingerprint: "m2" })];
    const desired = desiredNodes(BLOCK, F, nodes, 2);
    expect(desired).toEqual(rendezvousPick(BLOCK, ["a", "b"], 2));
    expect(desiredNodes(BLOCK, { modelFingerprint: "m2", engineFingerprint: "e1" }, nodes, 2)).toEqual(["d"]);
    expect(desiredNodes(BLOCK, { modelFingerprint: "m1", engineFingerprint: "e2" }, nodes, 2)).toEqual([]);
  });

  it("routes hot before warm before cold, then by rendezvous rank; only live holders", () => {
    const ids = ["a", "b", "c", "d"];
    const rank = rendezvousRank(BLOCK, ids);
    const [r0, r1, r2, r3] = rank as [string, string, string, string];
    const nodes = [
      node(r0),
      node(r1, { warm: [BLOCK] }),
      node(r2, { hot: [BLOCK] }),
      node(r3, { hot: [BLOCK], live: false }),
    ];
    const route = routeCandidates(BLOCK, new Set(ids), nodes);
    expect(route).toEqual([
      { id: r2, tier: "hot" },
      { id: r1, tier: "warm" },
      { id: r0, tier: "cold" },
    ]);
    // Not a holder: never a candidate, even when live.
    expect(routeCandidates(BLOCK, new Set([r0]), nodes)).toEqual([{ id: r0, tier: "cold" }]);
    expect(routeCandidates(BLOCK, new Set([r3]), nodes)).toEqual([]);
  });

  it("balances grafts among the holders that have the block hot or warm by calls open, never before a cold one", () => {
    const route = [
      { id: "h", tier: "hot" as const },
      { id: "w", tier: "warm" as const },
      { id: "c", tier: "cold" as const },
    ];
    const open = (counts: Record<string, number>) => (id: string) => counts[id] ?? 0;
    // Idle everywhere: the order of the route (hot, warm, cold) stays.
    expect(preferIdle(route, open({})).map((c) => c.id)).toEqual(["h", "w", "c"]);
    // The hot holder busy: the warm one, idle, goes first; the idle cold one stays last.
    expect(preferIdle(route, open({ h: 2 })).map((c) => c.id)).toEqual(["w", "h", "c"]);
    expect(preferIdle(route, open({ h: 3, w: 3 })).map((c) => c.id)).toEqual(["h", "w", "c"]);
  });

  it("plans copies to missing desired nodes, and drops only once all desired nodes hold the block", () => {
    const nodes = ["a", "b", "c"].map((id) => node(id));
    const desired = desiredNodes(BLOCK, F, nodes, 2);
    const outsider = ["a", "b", "c"].find((id) => !desired.includes(id)) as string;
    // Held only by the outsider: copy to both desired nodes, no drop yet.
    const first = planRebalance([{ blockId: BLOCK, ...F, holders: new Set([outsider]) }], nodes, 2);
    expect(first.actions).toEqual(
      desired.map((to) => ({ kind: "copy", blockId: BLOCK, from: outsider, to })),
    );
    // Held by all three: drop the outsider's copy.
    const second = planRebalance([{ blockId: BLOCK, ...F, holders: new Set(["a", "b", "c"]) }], nodes, 2);
    expect(second.actions).toEqual([{ kind: "drop", blockId: BLOCK, node: outsider }]);
    // In place: nothing to do. Held nowhere live: unavailable.
    expect(planRebalance([{ blockId: BLOCK, ...F, holders: new Set(desired) }], nodes, 2).actions).toEqual(
      [],
    );
    const gone = planRebalance([{ blockId: BLOCK, ...F, holders: new Set(["x"]) }], nodes, 2);
    expect(gone).toEqual({ actions: [], unavailable: [BLOCK] });
  });

  it("never plans a copy onto a node with other fingerprints", () => {
    const nodes = [node("a"), node("b", { engineFingerprint: "e9" }), node("c", { modelFingerprint: "m9" })];
    const plan = planRebalance([{ blockId: BLOCK, ...F, holders: new Set(["a"]) }], nodes, 2);
    expect(plan.actions).toEqual([]);
  });

  it("deposits go to the fingerprint group most live nodes share", () => {
    const nodes = [
      node("a"),
      node("b"),
      node("c", { modelFingerprint: "m2" }),
      node("d", { modelFingerprint: "m2", live: false }),
      node("e", { modelFingerprint: "m2", live: false }),
    ];
    expect(majorityGroup(nodes)).toEqual(F);
    expect(majorityGroup([])).toBeNull();
  });
});
