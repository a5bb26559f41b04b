/**
 * The library of a scale-out run: B verified, non-parametric solutions of distinct wording, each
 * padded to about T tokens of block (the first to a quarter of T: its token count sizes the others
 * for the model's tokenizer), deposited through the edge (each block lands on R = 2 nodes),
 * and the graft queries that reach them (the same wording with new numbers: the router's template
 * match, grafted on a node that holds the block). Every block's first graft output hash is kept,
 * so a later check can tell a block that still grafts byte-exactly from one that was lost.
 */
import { seededRng } from "../../shared/random.js";
import type { Cluster } from "./cluster.js";

const COLORS = ["red", "blue", "green", "amber", "violet", "silver", "golden", "crimson", "ivory", "teal"];
const CONTAINERS = [
  "crate",
  "barrel",
  "cabinet",
  "wagon",
  "locker",
  "basket",
  "chest",
  "trunk",
  "drawer",
  "carton",
];
const ITEMS = ["jars", "pens", "bolts", "cups", "tiles", "coins", "bulbs", "books", "shells", "spoons"];
/** Distinct wordings available (each index names a color, a container and an item). */
export const MAX_LIBRARY_BLOCKS = COLORS.length * CONTAINERS.length * ITEMS.length;

/** A deposited block and the query that grafts it. */
export interface LibraryBlock {
  blockId: string;
  tokenCount: number;
  /** The solve request body (JSON) that grafts this block. */
  body: string;
  /** SHA-256 of the output of its first graft through the edge. */
  outputSha256: string;
}

function wording(i: number) {
  const color = COLORS[i % 10] as string;
  const container = CONTAINERS[Math.floor(i / 10) % 10] as string;
  const item = ITEMS[Math.floor(i / 100) % 10] as string;
  const problem = (rows: number, per: number) =>
    `A ${color} ${container} holds ${rows} rows of ${per} ${item}. How many ${item} are in the ${color} ${container}?`;
  const lead = `17 rows of 23 ${item} make 17 × 23 = 391 ${item}.`;
  /** The worked solution: the lead and filler sentences up to about `chars` characters in all. */
  const solution = (chars: number) => {
    const parts = [lead];
    let length = lead.length;
    for (let k = 0; length < chars; k++) {
      const sentence = `Check ${k + 1}: counting row ${(k % 17) + 1} of the ${color} ${container} again, the ${item} still total 391.`;
      parts.push(sentence);
      length += sentence.length + 1;
    }
    return parts.join(" ");
  };
  return { problem, solution };
}

/** The block text around the problem and the solution (block-text.ts, version 1), in characters. */
const FRAME_CHARS = 110;
const PROGRAM = "print(391)\n";
/** A first guess of characters per token (corrected after the first deposit). */
const CHARS_PER_TOKEN_GUESS = 4;

/** Deposits `blocks` solutions of about `blockTokens` tokens each; resolves with their blocks. */
export async function depositLibrary(
  cluster: Cluster,
  o: { blocks: number; blockTokens: number; maxTokens: number; log?: (line: string) => void },
): Promise<LibraryBlock[]> {
  if (o.blocks > MAX_LIBRARY_BLOCKS) throw new Error(`at most ${MAX_LIBRARY_BLOCKS} blocks`);
  const out: LibraryBlock[] = [];
  let charsPerToken = CHARS_PER_TOKEN_GUESS;
  for (let i = 0; i < o.blocks; i++) {
    const w = wording(i);
    const problem = w.problem(17, 23);
    const fixed = FRAME_CHARS + problem.length + PROGRAM.length + 3;
    // The first block, a quarter of the target, measures the tokenizer (at one character a token
    // at worst, it still fits a slot that holds the target).
    const solution = w.solution((i === 0 ? o.blockTokens / 4 : o.blockTokens) * charsPerToken - fixed);
    const dep = await cluster.admin("POST", "/admin/solutions", {
      problem,
      solution,
      // Not parametric: new numbers cannot be re-run, so a query with them is grafted on the block.
      program: PROGRAM,
      answer: "391",
    });
    if (dep.status !== 201 && dep.status !== 200)
      throw new Error(`deposit ${i}: HTTP ${dep.status} ${JSON.stringify(dep.body)}`);
    const block = dep.body.block as { sha256: string; tokenCount: number } | null;
    if (!block) throw new Error(`deposit ${i}: no block in the answer ${JSON.stringify(dep.body)}`);
    // The first block tells how many characters a token is with this model's tokenizer.
    if (i === 0) charsPerToken = (fixed + solution.length) / block.tokenCount;
    const body = JSON.stringify({ problem: w.problem(12 + (i % 7), 30 + (i % 11)), maxTokens: o.maxTokens });
    const first = await graft(cluster, body);
    if (!first.ok || first.blockId !== block.sha256)
      throw new Error(`block ${i} (${block.sha256}) does not graft: ${first.detail}`);
    out.push({ blockId: block.sha256, tokenCount: block.tokenCount, body, outputSha256: first.outputSha256 });
    if ((i + 1) % 10 === 0 || i + 1 === o.blocks)
      o.log?.(`deposited ${i + 1}/${o.blocks} blocks (last: ${block.tokenCount} tokens)`);
  }
  return out;
}

/** One solve through the edge: whether it grafted, which block, and its output hash. */
export async function graft(
  cluster: Cluster,
  body: string,
): Promise<{ ok: boolean; blockId: string | null; outputSha256: string; detail: string }> {
  const res = await fetch(`${cluster.edgeUrl}/v1/solve`, {
    method: "POST",
    headers: { authorization: `Bearer ${cluster.key}`, "content-type": "application/json" },
    body,
    signal: AbortSignal.timeout(600_000),
  });
  const answer = (await res.json().catch(() => null)) as {
    source?: string;
    hashes?: { blockSha256: string | null; outputSha256: string | null };
  } | null;
  const blockId = answer?.hashes?.blockSha256 ?? null;
  const outputSha256 = answer?.hashes?.outputSha256 ?? "";
  const ok = res.status === 200 && answer?.source === "graft" && blockId !== null && outputSha256 !== "";
  return { ok, blockId, outputSha256, detail: `HTTP ${res.status} ${JSON.stringify(answer).slice(0, 400)}` };
}

/**
 * The request bodies of the graft workload: `count` draws, uniformly at random with a fixed seed,
 * from the library's queries (the load generator cycles through them in order).
 */
export function workloadBodies(library: LibraryBlock[], count: number, seed = 1): string[] {
  const rng = seededRng(`scale-out/${seed}`);
  return Array.from({ length: count }, () => rng.pick(library).body);
}

export interface LibraryCheck {
  blocks: number;
  /** Blocks that grafted through the edge with the output hash of their first graft. */
  grafted: number;
  /** Blocks whose graft failed, went to another block, or answered another output hash. */
  lost: { blockId: string; detail: string }[];
  /** Blocks held by fewer nodes than the replica count, by running node's own listing. */
  underReplicated: { blockId: string; holders: string[] }[];
}

/** Grafts every block once through the edge and lists who holds it. */
export async function checkLibrary(
  cluster: Cluster,
  library: LibraryBlock[],
  runningNodes: string[],
  replicas: number,
): Promise<LibraryCheck> {
  const lost: LibraryCheck["lost"] = [];
  for (const b of library) {
    const r = await graft(cluster, b.body);
    if (!r.ok || r.blockId !== b.blockId || r.outputSha256 !== b.outputSha256)
      lost.push({
        blockId: b.blockId,
        detail: r.ok ? `block ${r.blockId}, output ${r.outputSha256} (first: ${b.outputSha256})` : r.detail,
      });
  }
  const holdings = new Map<string, Set<string>>();
  for (const id of runningNodes)
    holdings.set(id, new Set((await cluster.client(id).listBlocks()).map((m) => m.sha256)));
  const underReplicated = library
    .map((b) => ({
      blockId: b.blockId,
      holders: runningNodes.filter((id) => holdings.get(id)?.has(b.blockId)),
    }))
    .filter((h) => h.holders.length < replicas);
  return { blocks: library.length, grafted: library.length - lost.length, lost, underReplicated };
}
