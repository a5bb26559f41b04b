import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { placementSpread, rendezvousPick, rendezvousRank, rendezvousScore } from "./rendezvous.js";

const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
const nodeIds = fc.uniqueArray(fc.stringMatching(/^[a-z0-9-]{1,12}$/), { minLength: 1, maxLength: 8 });

/** Deterministic block-like keys. */
const keys = (n: number, salt = "k") =>
  Array.from({ length: n }, (_, i) => {
    let s = "";
    for (let j = 0; s.length < 64; j++) s += ((i * 2654435761 + j * 40503 + salt.length) >>> 0).toString(16);
    return s.slice(0, 64);
  });

describe("rendezvous hashing", () => {
  it("is deterministic and independent of the order the nodes are listed in", () => {
    fc.assert(
      fc.property(hex64, nodeIds, fc.integer({ min: 1, max: 4 }), (key, nodes, r) => {
        const a = rendezvousPick(key, nodes, r);
        const b = rendezvousPick(key, [...nodes].reverse(), r);
        expect(a).toEqual(b);
        expect(a).toHaveLength(Math.min(r, nodes.length));
        expect(new Set(a).size).toBe(a.length);
      }),
    );
  });

  it("removing a node moves only the keys it held; adding one moves keys only onto it", () => {
    fc.assert(
      fc.property(hex64, nodeIds, fc.integer({ min: 1, max: 3 }), (key, nodes, r) => {
        fc.pre(nodes.length >= 2);
        const [gone, ...rest] = nodes as [string, ...string[]];
        const before = rendezvousPick(key, nodes, r);
        const after = rendezvousPick(key, rest, r);
        // Every survivor of the old set stays; at most one newcomer replaces the removed node.
        for (const n of before) if (n !== gone) expect(after).toContain(n);
        if (!before.includes(gone)) expect(after).toEqual(before);
        // Adding it back restores the original placement.
        expect(rendezvousPick(key, [...rest, gone], r)).toEqual(before);
      }),
    );
  });

  it("ranks extend picks (the r+1-th choice is the next fallback)", () => {
    const nodes = ["gpu-1", "gpu-2", "gpu-3", "gpu-4"];
    for (const key of keys(50)) {
      const rank = rendezvousRank(key, nodes);
      expect(rendezvousPick(key, nodes, 2)).toEqual(rank.slice(0, 2));
      expect(rendezvousScore(key, rank[0] as string)).toBeGreaterThanOrEqual(
        rendezvousScore(key, rank[1] as string),
      );
    }
  });

  it("spreads 1,000 blocks evenly over 3, 4 and 5 nodes (R = 2)", () => {
    const blocks = keys(1000);
    for (const n of [3, 4, 5]) {
      const nodes = Array.from({ length: n }, (_, i) => `gpu-${i + 1}`);
      const s = placementSpread(blocks, nodes, 2);
      expect(Object.values(s.counts).reduce((a, b) => a + b, 0)).toBe(2000);
      // Binomial noise at ~1000 draws per node is a few percent; 15% is a generous bound.
      expect(s.peakToMean).toBeLessThan(1.15);
      expect(s.min / s.mean).toBeGreaterThan(0.85);
    }
  });

  it("moves about r/n of the keys when a node joins", () => {
    const blocks = keys(1000);
    const three = ["gpu-1", "gpu-2", "gpu-3"];
    const four = [...three, "gpu-4"];
    let moved = 0;
    for (const key of blocks) {
      const a = new Set(rendezvousPick(key, three, 2));
      for (const n of rendezvousPick(key, four, 2)) if (!a.has(n)) moved++;
    }
    // Expected: the new node takes half of the 2,000 replicas' fair share: 2000/4 = 500.
    expect(moved).toBeGreaterThan(400);
    expect(moved).toBeLessThan(600);
  });

  it("rejects a non-positive replica count", () => {
    expect(() => rendezvousPick("k", ["a"], 0)).toThrow(RangeError);
  });
});
