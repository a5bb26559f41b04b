/**
 * Soft concept matching (edge/routing/soft-match.ts, concept-vectors.ts): the committed table of
 * word vectors gives synonyms a high cosine, the soft Dice overlap pairs each concept at most once
 * and never pairs the concepts the structure checks compare (antonyms are close in such a space),
 * the verdict ranks candidates by their exact overlap (instances of one template differ in close
 * words) while the soft overlap decides whether the best is alike enough, and, over a real libSQL file database holding held-out 3's library, re-wordings whose words are
 * synonyms of the library problem's reach it (the exact overlap alone abstained on them) with the
 * soft pairs in the decision.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateDatabase, type OpenDatabase, openDatabase } from "../edge/db/client.js";
import { registerProblem } from "../edge/db/library.js";
import { conceptSimilarity } from "../edge/routing/concept-vectors.js";
import {
  analyzeProblem,
  decideSimilar,
  libraryReader,
  ROUTER_TUNING,
  routeProblem,
  type SimilarCandidate,
} from "../edge/routing/router.js";
import { softDice } from "../edge/routing/soft-match.js";
import { canonicalConcept } from "../edge/routing/thesaurus.js";
import { sha256Hex } from "../shared/hash.js";
import { normalizeProblem, problemTemplate } from "../shared/normalize.js";

const similarity = (a: string, b: string) => conceptSimilarity(canonicalConcept(a), canonicalConcept(b));
const concepts = (...words: string[]) => new Set(words.map(canonicalConcept));

describe("concept vectors", () => {
  it("give synonyms a high cosine and unrelated words a low one", () => {
    expect(similarity("kids", "children")).toBeGreaterThan(0.7);
    expect(similarity("automobile", "car")).toBeGreaterThan(0.6);
    expect(similarity("list", "sequence")).toBeGreaterThan(ROUTER_TUNING.softMatch);
    expect(similarity("nickels", "dimes")).toBeLessThan(ROUTER_TUNING.softMatch);
    expect(similarity("kids", "kids")).toBe(1);
    expect(similarity("kids", "qqqzzz")).toBe(0);
  });
});

describe("softDice", () => {
  it("counts a close concept the other side lacks as shared, and names the pair", () => {
    const { score, pairs } = softDice(concepts("kids", "ticket"), concepts("children", "ticket"), 0.5);
    expect(score).toBe(1);
    expect(pairs.map((p) => `${p.from}~${p.to}`)).toEqual(["kid~children"]);
    expect(softDice(concepts("kids", "ticket"), concepts("children", "ticket"), 1.01).score).toBe(0.5);
  });

  it("pairs each concept at most once", () => {
    // `work` is close to both `put` (0.72) and `pay` (0.57): only the closer pairs.
    const { score, pairs } = softDice(concepts("put", "pay"), concepts("work"), 0.5);
    expect(pairs.map((p) => `${p.from}~${p.to}`)).toEqual(["put~work"]);
    expect(score).toBeCloseTo(2 / 3, 5);
  });

  it("never pairs what the structure checks compare: antonyms, alternatives, asked quantities, units", () => {
    for (const [a, b] of [
      ["older", "younger"],
      ["faster", "slower"],
      ["upstream", "downstream"],
      ["area", "perimeter"],
      ["celsius", "fahrenheit"],
      ["hours", "days"],
    ] as const) {
      expect(similarity(a, b), `${a}/${b}`).toBeGreaterThan(0.5);
      expect(softDice(concepts(a), concepts(b), 0).pairs, `${a}/${b}`).toEqual([]);
    }
  });
});

describe("decideSimilar with soft scores", () => {
  const candidate = (
    problemId: string,
    score: number,
    exactScore: number,
    answer: string,
  ): SimilarCandidate => ({
    problemId,
    score,
    exactScore,
    sameNumbers: true,
    differs: null,
    structure: analyzeProblem("sam has 5 apples and buys 3 more how many apples does he have"),
    answer,
  });
  it("ranks by the exact overlap and measures the margin to a runner-up on it", () => {
    // Another instance of the template with close words (`pens` for `apples`) ties on the soft
    // score; the exact words put the query's own problem ahead.
    const own = candidate("own", 0.9, 0.9, "8");
    const other = candidate("other", 0.9, 0.5, "9");
    expect(decideSimilar([other, own], ROUTER_TUNING)).toMatchObject({
      decision: "similar",
      problemId: "own",
      runnerUp: 0.5,
    });
    expect(decideSimilar([own, { ...other, exactScore: 0.8 }], ROUTER_TUNING).reason).toBe("ambiguous");
  });

  it("counts the soft matches for alike enough, with or without a runner-up", () => {
    const alone = candidate("own", 0.45, 0.2, "8");
    expect(decideSimilar([alone], ROUTER_TUNING)).toMatchObject({ decision: "similar", exactScore: 0.2 });
    expect(decideSimilar([{ ...alone, score: 0.2 }], ROUTER_TUNING).reason).toBe("below_threshold");
  });
});

describe("routing with soft matching (held-out 3's library)", () => {
  let dir: string;
  let handle: OpenDatabase;
  const idOf = new Map<string, string>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "kvgraft-router-soft-"));
    handle = await openDatabase({ url: `file:${join(dir, "edge.db")}` });
    await migrateDatabase(handle.db);
    const lines = readFileSync(
      join(import.meta.dirname, "fixtures", "router-heldout3-library.jsonl"),
      "utf8",
    );
    for (const line of lines.split("\n").filter((l) => l.trim() !== "")) {
      const e = JSON.parse(line) as { id: string; problem: string };
      const normalizedText = normalizeProblem(e.problem);
      const { template, params } = problemTemplate(normalizedText);
      const fingerprint = await sha256Hex(normalizedText);
      const { problem } = await registerProblem(handle.db, { normalizedText, fingerprint, template, params });
      idOf.set(problem.id, e.id);
    }
  });

  afterAll(() => {
    handle.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    [
      "arith-count-terms",
      "Count the terms of the list 7, 11, 15, ..., 199, where the gap between neighboring numbers is constant.",
      "list~sequence",
    ],
    [
      "average-new-item",
      "A delivery van holds 8 boxes whose average mass is fifteen kilograms. The driver loads another box of 24 kilograms. What is the average mass of the boxes now?",
      "now~new",
    ],
  ])("%s: %s", async (expected, query, pair) => {
    const reader = libraryReader(handle.db);
    const routed = await routeProblem(reader, normalizeProblem(query));
    expect(routed.decision).toBe("similar");
    expect(idOf.get(routed.problemId as string)).toBe(expected);
    expect(routed.softMatches?.some((m) => m.startsWith(`${pair} `))).toBe(true);
    // The exact overlap alone is below the threshold.
    const exact = await routeProblem(reader, normalizeProblem(query), { softMatch: 1.01 });
    expect(exact).toMatchObject({ decision: "abstain", reason: "below_threshold" });
  });
});
