/**
 * The router development set (test/fixtures/router-*.jsonl) and the starter library: schemas,
 * cross-references, normalization facts the router relies on, and every program run for real.
 *
 * Answer convention: integers print as integers; other decimals are rounded to 2 places with
 * trailing zeros dropped; probabilities are fractions in lowest terms (Python's `Fraction`).
 */
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Sandbox } from "../gpu-node/sandbox/sandbox.js";
import { canonicalNumbers, normalizeProblem, problemTemplate } from "../shared/normalize.js";
import { runAll } from "./helpers/sandbox-batch.js";

const LibraryEntry = z.strictObject({
  id: z.string().regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/),
  problem: z.string().min(10),
  solution: z.string().min(60),
  program: z.string().includes("PARAMS"),
  answer: z.string().regex(/^-?(?:0|[1-9]\d*)(?:\.\d?[1-9])?$|^-?[1-9]\d*\/[1-9]\d*$/),
});
type LibraryEntry = z.infer<typeof LibraryEntry>;

const IN_LIBRARY = ["exact", "paraphrase", "new_numbers"] as const;
const OUT_OF_LIBRARY = ["near_miss", "other_topic", "non_math"] as const;
const Query = z
  .strictObject({
    query: z.string().min(5),
    expect: z.string().nullable(),
    kind: z.enum([...IN_LIBRARY, ...OUT_OF_LIBRARY]),
    answer: z.string().min(1).optional(),
  })
  .refine((q) => (q.expect === null) === (OUT_OF_LIBRARY as readonly string[]).includes(q.kind), {
    message: "expect must be null exactly for out-of-library kinds",
  })
  .refine((q) => (q.answer !== undefined) === (q.expect !== null), {
    message: "answer is given exactly for in-library queries",
  });
type Query = z.infer<typeof Query>;

function readJsonl<T>(path: string, schema: z.ZodType<T>): T[] {
  const text = readFileSync(new URL(path, import.meta.url), "utf8");
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, i) => {
      const parsed = schema.safeParse(JSON.parse(line));
      if (!parsed.success) throw new Error(`${path}:${i + 1}: ${parsed.error.message}`);
      return parsed.data;
    });
}

const library = readJsonl("./fixtures/router-library.jsonl", LibraryEntry);
const queries = readJsonl("./fixtures/router-queries.jsonl", Query);
const starter = readJsonl("../edge/starter-library.jsonl", LibraryEntry);
const byId = new Map(library.map((e) => [e.id, e]));

/**
 * What every program of the library and of its new-numbers queries prints, run in the product's
 * sandbox (the default WebAssembly backend; many runs to a job: test/helpers/sandbox-batch.ts).
 */
const printed = new Map<string, string | null>();
const key = (program: string, params: readonly number[]) => JSON.stringify([program, params]);

beforeAll(async () => {
  const requests = [
    ...library.map((e) => ({ program: e.program, params: problemTemplate(e.problem).params })),
    ...queries
      .filter((q) => q.kind === "new_numbers" && q.expect !== null)
      .map((q) => ({ program: entry(q).program, params: problemTemplate(q.query).params })),
  ];
  const sandbox = await Sandbox.create({ warm: 2 });
  try {
    const runs = await runAll(sandbox, requests);
    for (const [i, r] of requests.entries()) printed.set(key(r.program, r.params), runs[i]?.answer ?? null);
  } finally {
    sandbox.close();
  }
}, 120_000);

/** What a program printed last on `params` (the sandbox's answer line). */
function runProgram(program: string, params: number[]): string | null {
  if (!printed.has(key(program, params))) throw new Error("this run was not made in beforeAll");
  return printed.get(key(program, params)) ?? null;
}

const entry = (q: Query): LibraryEntry => {
  const e = q.expect === null ? undefined : byId.get(q.expect);
  if (!e) throw new Error(`query ${JSON.stringify(q.query)} expects no library entry`);
  return e;
};
const ofKind = (kind: Query["kind"]) => queries.filter((q) => q.kind === kind);

describe("router library", () => {
  it("has at least 32 problems with unique ids and distinct templates", () => {
    expect(library.length).toBeGreaterThanOrEqual(32);
    expect(byId.size).toBe(library.length);
    const templates = new Set(library.map((e) => problemTemplate(e.problem).template));
    expect(templates.size).toBe(library.length);
  });

  it("states concrete numbers in every problem", () => {
    for (const e of library) expect(problemTemplate(e.problem).params.length, e.id).toBeGreaterThan(0);
  });

  it.each(library.map((e) => [e.id, e] as const))(
    "%s: the program prints the answer from PARAMS",
    (_id, e) => {
      expect(runProgram(e.program, problemTemplate(e.problem).params)).toBe(e.answer);
    },
  );
});

describe("router queries", () => {
  it("name library ids, with one exact repeat and one new-numbers variant per problem", () => {
    for (const q of queries) if (q.expect !== null) expect(byId.has(q.expect), q.query).toBe(true);
    for (const e of library) {
      expect(
        ofKind("exact").filter((q) => q.expect === e.id),
        e.id,
      ).toHaveLength(1);
      expect(
        ofKind("new_numbers").filter((q) => q.expect === e.id),
        e.id,
      ).toHaveLength(1);
    }
    expect(ofKind("paraphrase").length).toBeGreaterThanOrEqual(20);
    expect(queries.filter((q) => q.expect === null).length).toBeGreaterThanOrEqual(25);
    for (const kind of OUT_OF_LIBRARY) expect(ofKind(kind).length, kind).toBeGreaterThan(0);
  });

  it("exact repeats differ in form but state their problem up to case and number forms, with its answer", () => {
    // Case and a number's written form can change a problem (issue 35), so normalization keeps
    // them: these repeats are the same problem only as the router's re-worded step compares them.
    const loose = (text: string) => canonicalNumbers(normalizeProblem(text)).toLowerCase();
    for (const q of ofKind("exact")) {
      const e = entry(q);
      expect(q.query, e.id).not.toBe(e.problem);
      expect(loose(q.query), e.id).toBe(loose(e.problem));
      expect(q.answer, e.id).toBe(e.answer);
    }
  });

  it("paraphrases keep the answer but not the wording", () => {
    for (const q of ofKind("paraphrase")) {
      const e = entry(q);
      expect(problemTemplate(q.query).template, e.id).not.toBe(problemTemplate(e.problem).template);
      expect(q.answer, e.id).toBe(e.answer);
    }
  });

  it("out-of-library queries match no library template", () => {
    const templates = new Set(library.map((e) => problemTemplate(e.problem).template));
    for (const q of queries.filter((x) => x.expect === null))
      expect(templates.has(problemTemplate(q.query).template), q.query).toBe(false);
  });

  it.each(ofKind("new_numbers").map((q) => [q.expect, q] as const))(
    "%s: the new-numbers variant shares the template and the program computes its answer",
    (_id, q) => {
      const e = entry(q);
      const mine = problemTemplate(q.query);
      const original = problemTemplate(e.problem);
      expect(mine.template).toBe(original.template);
      expect(mine.params).not.toEqual(original.params);
      const answer = runProgram(e.program, mine.params);
      expect(answer).toBe(q.answer);
      // Parametric check: new parameters give a new answer, so nothing is hard-coded to the original.
      expect(answer).not.toBe(e.answer);
    },
  );
});

describe("re-wording development set", () => {
  const Rewording = z
    .strictObject({
      query: z.string().min(5),
      expect: z.string().nullable(),
      kind: z.enum(["reworded", ...OUT_OF_LIBRARY]),
      answer: z.string().min(1).optional(),
    })
    .refine((q) => (q.expect === null) === (q.kind !== "reworded"), {
      message: "expect must be null exactly for out-of-library kinds",
    })
    .refine((q) => (q.answer !== undefined) === (q.expect !== null), {
      message: "answer is given exactly for re-wordings",
    });
  const rewordings = readJsonl("./fixtures/router-dev-rewordings.jsonl", Rewording);

  it("re-words at least 20 library problems at least 3 times each, with their answers, and has out-of-library queries", () => {
    const perProblem = new Map<string, number>();
    for (const q of rewordings.filter((x) => x.expect !== null)) {
      const e = byId.get(q.expect as string);
      expect(e, q.query).toBeDefined();
      expect(q.answer, q.query).toBe(e?.answer);
      // A re-wording, not a copy or a new-numbers variant of the library problem.
      expect(problemTemplate(q.query).template, q.query).not.toBe(problemTemplate(e?.problem ?? "").template);
      perProblem.set(q.expect as string, (perProblem.get(q.expect as string) ?? 0) + 1);
    }
    expect([...perProblem.values()].filter((n) => n >= 3).length).toBeGreaterThanOrEqual(20);
    expect(rewordings.filter((q) => q.expect === null).length).toBeGreaterThanOrEqual(10);
  });
});

describe("starter library", () => {
  it("is 12 distinct entries copied verbatim from the router library", () => {
    expect(starter).toHaveLength(12);
    expect(new Set(starter.map((e) => e.id)).size).toBe(12);
    for (const e of starter) expect(e).toEqual(byId.get(e.id));
  });
});
