/**
 * Rendezvous (highest-random-weight) hashing: every (key, node) pair gets a pseudo-random score,
 * and a key lives on the `r` nodes with the highest scores. Adding or removing a node only moves
 * the keys whose top-`r` set that node enters or leaves (about r/n of them), and every edge
 * isolate computes the same placement from the same node list without coordination.
 *
 * Pure and synchronous (no Web Crypto needed): the score is a 53-bit mix (cyrb53) of the key and
 * the node id. Keys here are block SHA-256s, so they are already uniform; the mix only has to
 * decorrelate node ids such as `gpu-1`, `gpu-2`.
 */

/** cyrb53: a fast, well-mixed 53-bit string hash (public domain, bryc). */
export function hash53(text: string, seed = 0): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** The score of `node` for `key`: higher wins. */
export function rendezvousScore(key: string, node: string): number {
  return hash53(`${key}\u0000${node}`);
}

/** All nodes ordered best first for `key` (ties, practically impossible, broken by id). */
export function rendezvousRank<T extends string>(key: string, nodes: readonly T[]): T[] {
  return [...new Set(nodes)]
    .map((node) => ({ node, score: rendezvousScore(key, node) }))
    .sort((a, b) => b.score - a.score || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))
    .map((e) => e.node);
}

/** The `r` nodes `key` lives on (all of them when there are fewer than `r`), best first. */
export function rendezvousPick<T extends string>(key: string, nodes: readonly T[], r: number): T[] {
  if (!Number.isInteger(r) || r < 1) throw new RangeError("r must be a positive integer");
  return rendezvousRank(key, nodes).slice(0, r);
}

/** How many of `keys` land on each node (each key counted on each of its `r` nodes). */
export function placementSpread(keys: readonly string[], nodes: readonly string[], r: number) {
  const counts = new Map<string, number>(nodes.map((n) => [n, 0]));
  for (const key of keys)
    for (const node of rendezvousPick(key, nodes, r)) counts.set(node, (counts.get(node) ?? 0) + 1);
  const values = [...counts.values()];
  const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const min = Math.min(...values);
  const max = Math.max(...values);
  return {
    counts: Object.fromEntries(counts),
    mean,
    min,
    max,
    /** (max - min) / mean: 0 is perfectly even. */
    spread: mean === 0 ? 0 : (max - min) / mean,
    /** max / mean: how much more the fullest node holds than its fair share. */
    peakToMean: mean === 0 ? 0 : max / mean,
  };
}
