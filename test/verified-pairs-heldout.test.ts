/**
 * Issue 35: the held-out meaning-changing pairs (test/fixtures/verified-pairs-heldout.jsonl),
 * written with the main set before the fix and not looked at while it was developed; the same
 * edge and checks as test/verified-pairs.test.ts.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import { checkPair, type PairsEdge, readPairs, startPairsEdge } from "./helpers/verified-pairs.js";

const pairs = readPairs("verified-pairs-heldout.jsonl");
let edge: PairsEdge;

beforeAll(async () => {
  edge = await startPairsEdge(pairs);
}, 300_000);

afterAll(async () => {
  await edge?.close();
});

describe("held-out meaning-changing pairs (test/fixtures/verified-pairs-heldout.jsonl)", () => {
  it.each(pairs.map((p) => [p.id, p] as const))("%s", async (_id, pair) => {
    await checkPair(edge, pair);
  });
});
