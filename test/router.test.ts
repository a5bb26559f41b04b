/**
 * The router over a real libSQL file database holding the development library
 * (test/fixtures/router-library.jsonl, problems and verified solutions): normalization
 * equivalences answered from the same problem, new numbers matched by template, paraphrases routed
 * as `similar`, near misses and other queries abstained, and the calibrated constants keeping the
 * whole development set right.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateDatabase, type OpenDatabase, openDatabase } from "../edge/db/client.js";
import { addSolution, registerBlock, registerProblem } from "../edge/db/library.js";
import { decideSimilar, ROUTER_TUNING, routeProblem } from "../edge/routing/router.js";
import { sha256Hex } from "../shared/hash.js";
import { normalizeProblem, problemTemplate } from "../shared/normalize.js";

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
  const r = await routeProblem(handle.db, normalizeProblem(text));
  return { ...r, entry: r.problemId ? entryOf.get(r.problemId) : undefined };
};

describe("exact problem: answer", () => {
  it.each([
    ["LaTeX vs plain", "What is the remainder when $7^{100}$ is divided by $13$?", "power-mod"],
    ["\\frac and \\cdot", "What is $\\frac{35}{100} \\cdot 240$?", null],
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
  ])("%s", async (_name, text, id) => {
    const r = await route(text);
    if (id === null) {
      // Not a library problem in any form: no exact answer, whatever else happens.
      expect(r.decision).not.toBe("answer");
      return;
    }
    expect(r).toMatchObject({ decision: "answer", reason: "fingerprint", score: 1, entry: id });
  });

  it("the decimal forms 0.50 and .5 are one number", async () => {
    const a = normalizeProblem("A coin lands heads with probability 0.50; what is P(two heads)?");
    const b = normalizeProblem("A coin lands heads with probability .5; what is P(two heads)?");
    expect(a).toBe(b);
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

  it("says why: a changed word, other numbers, nothing alike", async () => {
    expect(
      await route("What is the simple interest on $2,000 at 5% per year for 3 months, in dollars?"),
    ).toMatchObject({
      decision: "abstain",
      reason: "near_miss",
    });
    expect(await route("Find the hypotenuse of a right triangle whose legs measure 5 and 12.")).toMatchObject(
      {
        decision: "abstain",
        reason: "numbers_differ",
      },
    );
    expect(await route("What is the sum of the prime numbers between 1 and 50?")).toMatchObject({
      decision: "abstain",
      reason: "question_differs",
    });
    expect(await route("Find the larger root of the equation x^2 + 5x + 6 = 0.")).toMatchObject({
      decision: "abstain",
      reason: "near_miss",
    });
    expect(await route("What is the capital of Australia?")).toMatchObject({
      decision: "abstain",
      reason: "no_candidates",
      score: 0,
    });
    expect(await route("!!! ???")).toMatchObject({ decision: "abstain", reason: "no_candidates", score: 0 });
  });
});

describe("decideSimilar", () => {
  const best = {
    template: "t",
    score: 0.6,
    runnerUp: 0.2,
    editRatio: 0.6,
    noNewWords: false,
    questionDiffers: false,
  };
  it("applies threshold, margin, the question words and the rewrite minimum in that order", () => {
    expect(decideSimilar(null, ROUTER_TUNING).reason).toBe("no_candidates");
    expect(decideSimilar(best, ROUTER_TUNING)).toMatchObject({
      decision: "similar",
      score: 0.6,
      runnerUp: 0.2,
    });
    expect(decideSimilar({ ...best, score: 0.1, runnerUp: 0 }, ROUTER_TUNING).reason).toBe("below_threshold");
    expect(decideSimilar({ ...best, runnerUp: 0.59 }, ROUTER_TUNING).reason).toBe("ambiguous");
    expect(decideSimilar({ ...best, editRatio: 0.3 }, ROUTER_TUNING).reason).toBe("near_miss");
    // With no new content word a smaller rewrite is enough.
    expect(decideSimilar({ ...best, editRatio: 0.3, noNewWords: true }, ROUTER_TUNING).decision).toBe(
      "similar",
    );
    expect(decideSimilar(best, { ...ROUTER_TUNING, threshold: 0.7 }).reason).toBe("below_threshold");
    expect(decideSimilar({ ...best, questionDiffers: true }, ROUTER_TUNING).reason).toBe("question_differs");
    // The same words once canonical forms apply (`gcd` = `greatest common divisor`): the same problem.
    expect(decideSimilar({ ...best, editRatio: 0, noNewWords: true }, ROUTER_TUNING).decision).toBe(
      "similar",
    );
  });
});
