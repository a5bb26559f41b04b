/**
 * The router over a real libSQL file database holding the tuning library
 * (test/fixtures/router-library.jsonl, problems and verified solutions): normalization
 * equivalences answered from the same problem, new numbers matched by template, paraphrases routed
 * as `similar`, near misses and other queries abstained, the calibrated constants keeping the
 * whole tuning set right, and the re-wording development set (router-dev-rewordings.jsonl, not
 * used for calibration) above its target with no wrong route.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateDatabase, type OpenDatabase, openDatabase } from "../edge/db/client.js";
import { addSolution, registerBlock, registerProblem } from "../edge/db/library.js";
import {
  analyzeProblem,
  decideSimilar,
  libraryReader,
  ROUTER_TUNING,
  routeProblem,
  type SimilarCandidate,
} from "../edge/routing/router.js";
import { sha256Hex } from "../shared/hash.js";
import { canonicalNumbers, normalizeProblem, problemTemplate } from "../shared/normalize.js";

interface Entry {
  id: string;
  problem: string;
  answer: string;
}
interface Query {
  query: string;
  expect: string | null;
  kind: string;
}

const jsonl = <T>(name: string): T[] =>
  readFileSync(join(import.meta.dirname, "fixtures", name), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
const library = jsonl<Entry>("router-library.jsonl");
const queries = jsonl<Query>("router-queries.jsonl");
const rewordings = jsonl<Query>("router-dev-rewordings.jsonl");

let dir: string;
let handle: OpenDatabase;
/** library id -> problem id, and back */
const problemOf = new Map<string, string>();
const entryOf = new Map<string, string>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-router-"));
  handle = await openDatabase({ url: `file:${join(dir, "edge.db")}` });
  await migrateDatabase(handle.db);
  for (const e of library) {
    const normalizedText = normalizeProblem(e.problem);
    const { template, params } = problemTemplate(normalizedText);
    const fingerprint = await sha256Hex(normalizedText);
    const { problem } = await registerProblem(handle.db, { normalizedText, fingerprint, template, params });
    await addSolution(handle.db, {
      problemId: problem.id,
      worked: "see the fixture",
      program: null,
      answer: e.answer,
      parametric: false,
      verified: true,
      verification: { method: "test" },
    });
    problemOf.set(e.id, problem.id);
    entryOf.set(problem.id, e.id);
  }
});

afterAll(() => {
  handle.close();
  rmSync(dir, { recursive: true, force: true });
});

const route = async (text: string) => {
  const r = await routeProblem(libraryReader(handle.db), normalizeProblem(text));
  return { ...r, entry: r.problemId ? entryOf.get(r.problemId) : undefined };
};

describe("exact problem: answer", () => {
  it.each([
    ["LaTeX vs plain", "What is the remainder when $7^{100}$ is divided by $13$?", "power-mod"],
    ["\\frac and \\cdot", "What is $\\frac{35}{100} \\cdot 240$?", null],
  ])("%s", async (_name, text, id) => {
    const r = await route(text);
    if (id === null) {
      // Not a library problem in any form: no exact answer, whatever else happens.
      expect(r.decision).not.toBe("answer");
      return;
    }
    expect(r).toMatchObject({ decision: "answer", reason: "fingerprint", score: 1, entry: id });
  });

  // Another written form of a number, or another letter case, may be another problem (issue 35):
  // never the exact answer, at most the re-worded route to the problem.
  it.each([
    [
      "thousands separators and trailing zeros",
      "What is the simple interest on $2{,}000.00 at 5% per year for 3 years, in dollars?",
      "simple-interest",
    ],
    [
      "Unicode, case and spacing",
      "A TOWN’S   POPULATION grew from 12,500 to 15,000.  By what percent did it increase ?",
      "percent-increase",
    ],
  ])("%s: re-worded, not the exact problem", async (_name, text, id) => {
    expect(await route(text)).toMatchObject({ decision: "similar", reason: "similar", entry: id });
  });

  it("the decimal forms 0.50 and .5 are two written forms of one value", async () => {
    const a = normalizeProblem("A coin lands heads with probability 0.50; what is P(two heads)?");
    const b = normalizeProblem("A coin lands heads with probability .5; what is P(two heads)?");
    expect(a).not.toBe(b);
    expect(canonicalNumbers(a)).toBe(canonicalNumbers(b));
  });
});

describe("same template, new numbers: template", () => {
  it.each(queries.filter((q) => q.kind === "new_numbers").map((q) => [q.expect, q.query] as const))(
    "%s",
    async (id, text) => {
      expect(await route(text)).toMatchObject({
        decision: "template",
        reason: "template",
        score: 1,
        entry: id,
      });
    },
  );
});

describe("reworded: similar", () => {
  it.each(queries.filter((q) => q.kind === "paraphrase").map((q) => [q.expect, q.query] as const))(
    "%s",
    async (id, text) => {
      const r = await route(text);
      expect(r).toMatchObject({ decision: "similar", reason: "similar", entry: id });
      expect(r.score).toBeGreaterThanOrEqual(ROUTER_TUNING.threshold);
      expect(r.score - (r.runnerUp ?? 0)).toBeGreaterThanOrEqual(ROUTER_TUNING.margin);
    },
  );

  it("the same words once the thesaurus applies", async () => {
    expect(await route("What is the GCD of 84 and 126?")).toMatchObject({
      decision: "similar",
      entry: "gcd",
    });
  });

  it("carries the problem's newest ready block", async () => {
    const problemId = problemOf.get("hypotenuse") as string;
    const sha = "a".repeat(64);
    const fp = { sha256: "b".repeat(64) };
    await registerBlock(handle.db, {
      sha256: sha,
      problemId,
      manifest: {
        tokenCount: 10,
        tokensSha256: "c".repeat(64),
        textSha256: "d".repeat(64),
        modelFingerprint: fp,
        engineFingerprint: fp,
      },
      state: "ready",
      nodeId: null,
    });
    expect(await route("Find the hypotenuse of a right triangle whose legs measure 9 and 12.")).toMatchObject(
      {
        decision: "similar",
        problemId,
        blockId: sha,
      },
    );
  });
});

describe("abstain", () => {
  it.each(queries.filter((q) => q.expect === null).map((q) => [q.kind, q.query] as const))(
    "%s: %s",
    async (_kind, text) => {
      const r = await route(text);
      expect(r.decision).toBe("abstain");
      expect(r.problemId).toBeUndefined();
    },
  );

  it("says why: a changed unit, other numbers, another question, a changed formula, nothing alike", async () => {
    expect(
      await route("What is the simple interest on $2,000 at 5% per year for 3 months, in dollars?"),
    ).toMatchObject({ decision: "abstain", reason: "structure_differs" });
    expect(await route("Find the hypotenuse of a right triangle whose legs measure 5 and 12.")).toMatchObject(
      { decision: "abstain", reason: "numbers_differ" },
    );
    expect(await route("What is the sum of the prime numbers between 1 and 50?")).toMatchObject({
      decision: "abstain",
      reason: "question_differs",
    });
    expect(await route("Find the larger root of the equation x^2 + 5x + 6 = 0.")).toMatchObject({
      decision: "abstain",
      reason: "structure_differs",
    });
    // The gcd problem's numbers and one word of it, nothing else alike.
    expect(await route("Name a common animal with 84 teeth and 126 bones.")).toMatchObject({
      decision: "abstain",
      reason: "below_threshold",
    });
    // No template shares a concept.
    expect(await route("Write a limerick about cats.")).toMatchObject({
      decision: "abstain",
      reason: "no_candidates",
    });
    expect(await route("!!! ???")).toMatchObject({ decision: "abstain", reason: "no_candidates", score: 0 });
  });
});

describe("re-wording development set (not used for calibration)", () => {
  it("no wrong route, every out-of-library query abstains, at least 90% of re-wordings reach their problem", async () => {
    let right = 0;
    const wrong: string[] = [];
    const inLibrary = rewordings.filter((q) => q.expect !== null);
    for (const q of rewordings) {
      const r = await route(q.query);
      if (r.entry !== undefined && r.entry !== q.expect) wrong.push(`${q.query} -> ${r.entry}`);
      if (q.expect !== null && r.entry === q.expect) right++;
      if (q.expect === null) expect(r.decision, q.query).toBe("abstain");
    }
    expect(wrong).toEqual([]);
    expect(inLibrary.length).toBeGreaterThanOrEqual(60);
    expect(right / inLibrary.length).toBeGreaterThanOrEqual(0.9);
  });
});

describe("analyzeProblem", () => {
  const analyzed = (text: string) => analyzeProblem(normalizeProblem(text));
  it("reads spelled-out numbers, ordinals and factors, and leaves out answer-format clauses", () => {
    expect(
      analyzed("How many ways can four books be arranged, rounded to 2 decimal places?").numbers,
    ).toEqual({
      digits: [],
      words: ["4"],
    });
    expect(
      analyzed("Three hundred and sixty divided by twenty-five; the tenth term is twice that.").numbers,
    ).toEqual({ digits: [], words: ["360", "25", "10", "2"] });
    expect(analyzed("What is 35% of 240? Give the answer as a fraction in lowest terms.").numbers).toEqual({
      digits: ["35", "240"],
      words: [],
    });
  });

  it("maps the ways to say one thing to one concept", () => {
    const a = analyzed("Find the highest common factor of 84 and 126.");
    const b = analyzed("What is the greatest common divisor of 84 and 126?");
    expect([...a.concepts]).toEqual(["gcd"]);
    expect([...b.concepts]).toEqual(["gcd"]);
    expect(analyzed("A car travels at 72 kilometers per hour.").concepts).toContain("kmh");
    expect(analyzed("A car travels at 72 km/h.").concepts).toContain("kmh");
    expect(analyzed("How many square centimeters does it cover?").asked).toContain("area");
  });

  it("finds the question sentence, its asked-for quantities and variables, and the formulas", () => {
    const a = analyzed("Solve the system 2x + 3y = 13 and 4x - y = 5. What is the value of y?");
    expect([...a.askedVariables]).toEqual(["y"]);
    expect(a.formulas).toEqual(["2x+3y=13", "4x-y=5"]);
    expect(
      [...analyzed("Two dice are rolled. What is the probability that the sum is 8?").asked].sort(),
    ).toEqual(["probability", "sum"]);
  });
});

describe("decideSimilar", () => {
  const best: SimilarCandidate = {
    problemId: "p1",
    score: 0.6,
    sameNumbers: true,
    differs: null,
    structure: analyzeProblem("what is the area of a circle with a diameter of 14 cm"),
    answer: "153.94",
  };
  const other = analyzeProblem("what is the circumference of a circle with a diameter of 14 cm");
  it("needs the same numbers, then applies threshold, margin and the structure checks in that order", () => {
    expect(decideSimilar([], ROUTER_TUNING).reason).toBe("no_candidates");
    expect(decideSimilar([best], ROUTER_TUNING)).toMatchObject({
      decision: "similar",
      problemId: "p1",
      score: 0.6,
      runnerUp: 0,
    });
    expect(decideSimilar([{ ...best, sameNumbers: false }], ROUTER_TUNING).reason).toBe("numbers_differ");
    expect(decideSimilar([{ ...best, sameNumbers: false, score: 0.1 }], ROUTER_TUNING).reason).toBe(
      "below_threshold",
    );
    expect(decideSimilar([{ ...best, score: 0.1 }], ROUTER_TUNING).reason).toBe("below_threshold");
    expect(
      decideSimilar(
        [best, { ...best, problemId: "p2", score: 0.55, structure: other, answer: "43.98" }],
        ROUTER_TUNING,
      ).reason,
    ).toBe("ambiguous");
    // The same problem stored twice (another phrasing, the same answer) is no ambiguity: the
    // closer copy wins; with another answer it is another problem.
    const copy = analyzeProblem("find the area of a round disk 14 cm across");
    expect(
      decideSimilar([{ ...best, problemId: "p2", score: 0.6, structure: copy }, best], ROUTER_TUNING),
    ).toMatchObject({ decision: "similar", problemId: "p2" });
    expect(
      decideSimilar([best, { ...best, problemId: "p2", score: 0.55, answer: "154" }], ROUTER_TUNING).reason,
    ).toBe("ambiguous");
    // A lexically closer candidate with other numbers is no runner-up: it is another instance.
    expect(
      decideSimilar([{ ...best, problemId: "p2", score: 0.9, sameNumbers: false }, best], ROUTER_TUNING),
    ).toMatchObject({ decision: "similar", problemId: "p1" });
    expect(decideSimilar([{ ...best, differs: "question_differs" }], ROUTER_TUNING).reason).toBe(
      "question_differs",
    );
    expect(decideSimilar([{ ...best, differs: "structure_differs" }], ROUTER_TUNING).reason).toBe(
      "structure_differs",
    );
    expect(decideSimilar([best], { ...ROUTER_TUNING, threshold: 0.7 }).reason).toBe("below_threshold");
  });
});
