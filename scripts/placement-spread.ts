/**
 * Placement spread of rendezvous hashing: 1,000 blocks (random SHA-256 ids) with R replicas over
 * 3, 4 and 5 nodes, and how many replicas move when a node joins or leaves.
 *
 *   node --import tsx scripts/placement-spread.ts [--blocks 1000] [--replicas 2] [--seed 1]
 */
import { createHash } from "node:crypto";
import { parseArgs } from "node:util";
import { placementSpread, rendezvousPick } from "../shared/rendezvous.js";

const { values } = parseArgs({
  options: {
    blocks: { type: "string", default: "1000" },
    replicas: { type: "string", default: "2" },
    seed: { type: "string", default: "1" },
  },
});
const count = Number(values.blocks);
const r = Number(values.replicas);
const keys = Array.from({ length: count }, (_, i) =>
  createHash("sha256").update(`block-${values.seed}-${i}`).digest("hex"),
);
const ids = (n: number) => Array.from({ length: n }, (_, i) => `gpu-${i + 1}`);

/** Replicas that change nodes between two node sets. */
function moved(from: string[], to: string[]): number {
  let n = 0;
  for (const key of keys) {
    const before = new Set(rendezvousPick(key, from, r));
    for (const node of rendezvousPick(key, to, r)) if (!before.has(node)) n++;
  }
  return n;
}

console.log(`${count} blocks, R=${r} (${count * r} replicas)`);
console.log(
  "nodes  per-node counts                          mean    min   max   (max-min)/mean  max/mean  moved on join  moved on leave",
);
for (const n of [3, 4, 5]) {
  const s = placementSpread(keys, ids(n), r);
  const counts = Object.values(s.counts).join(" ");
  const join = moved(ids(n), ids(n + 1));
  const leave = moved(ids(n), ids(n - 1));
  console.log(
    `${String(n).padEnd(6)} ${counts.padEnd(40)} ${s.mean.toFixed(1).padStart(6)} ${String(s.min).padStart(5)} ${String(s.max).padStart(5)}   ${(s.spread * 100).toFixed(1).padStart(6)}%        ${s.peakToMean.toFixed(3)}     ${String(join).padStart(5)} (${((join / (count * r)) * 100).toFixed(1)}%)   ${String(leave).padStart(5)} (${((leave / (count * r)) * 100).toFixed(1)}%)`,
  );
}
