/**
 * `kvgraft eval router` as a user runs it (child process, real sandbox, temporary libSQL database)
 * on a slice of the development set, and its pure parts: the Wilson interval and the scoring.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { scoreRouting, wilson95 } from "../cli/commands/eval.js";
import { runCli } from "./helpers/cli.js";

const dir = mkdtempSync(join(tmpdir(), "kvgraft-eval-router-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lines = (name: string) =>
  readFileSync(join(import.meta.dirname, "fixtures", name), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "");

describe("wilson95", () => {
  it("matches the reference report's 15/15 and known values", () => {
    expect(wilson95(15, 15)).toEqual([0.7961, 1]);
    const [lo, hi] = wilson95(5, 10);
    expect(lo).toBeCloseTo(0.2366, 4);
    expect(hi).toBeCloseTo(0.7634, 4);
    expect(wilson95(0, 4)).toEqual([0, 0.4899]);
    expect(wilson95(0, 0)).toEqual([0, 1]);
  });
});

describe("scoreRouting", () => {
  it("counts right routes, abstentions, wrong routes and transfers", () => {
    const queries = [
      { query: "a", expect: "x", answer: "1" },
      { query: "b", expect: "x", answer: "2" },
      { query: "c", expect: "y" },
      { query: "d", expect: null },
      { query: "e", expect: null },
    ];
    const result = scoreRouting(queries, [
      { decision: "answer", id: "x", ms: 1 },
      { decision: "template", id: "x", ms: 2, transferAnswer: "2.0" },
      { decision: "similar", id: "x", ms: 3 },
      { decision: "abstain", id: null, ms: 4 },
      { decision: "similar", id: "y", ms: 5 },
    ]);
    expect(result).toEqual({
      inLibrary: { n: 3, correct: 2, wilson95: wilson95(2, 3) },
      outOfLibrary: { n: 2, abstained: 1, wilson95: wilson95(1, 2) },
      wrongRoutes: 2,
      transfer: { n: 1, correct: 1 },
      p50RouteMs: 3,
    });
  });
});

describe("kvgraft eval router", () => {
  it("in-process on a slice of the dev set: JSON last, every decision right", () => {
    const ids = new Set(["change-apples", "gcd", "hypotenuse", "kmh-to-ms"]);
    const library = lines("router-library.jsonl").filter((l) => ids.has(JSON.parse(l).id));
    const queries = lines("router-queries.jsonl").filter((l) => {
      const q = JSON.parse(l);
      return (
        ids.has(q.expect) || (q.expect === null && /apples|km\/h|Australia|common multiple/.test(q.query))
      );
    });
    writeFileSync(join(dir, "lib.jsonl"), `${library.join("\n")}\n`);
    writeFileSync(join(dir, "q.jsonl"), `${queries.join("\n")}\n`);
    const r = runCli([
      "eval",
      "router",
      "--library",
      join(dir, "lib.jsonl"),
      "--queries",
      join(dir, "q.jsonl"),
      "--json",
    ]);
    expect(r.status, r.stderr).toBe(0);
    const inLibrary = queries.filter((l) => JSON.parse(l).expect !== null).length;
    const outOfLibrary = queries.length - inLibrary;
    expect(outOfLibrary).toBeGreaterThanOrEqual(3);
    expect(r.json).toEqual({
      inLibrary: { n: inLibrary, correct: inLibrary, wilson95: wilson95(inLibrary, inLibrary) },
      outOfLibrary: {
        n: outOfLibrary,
        abstained: outOfLibrary,
        wilson95: wilson95(outOfLibrary, outOfLibrary),
      },
      wrongRoutes: 0,
      transfer: { n: 4, correct: 4 },
      p50RouteMs: expect.any(Number),
    });
  }, 60_000);

  it("refuses a query that names an unknown library id, and missing flags", () => {
    writeFileSync(join(dir, "bad.jsonl"), `${JSON.stringify({ query: "What is 2+2?", expect: "nope" })}\n`);
    const bad = runCli([
      "eval",
      "router",
      "--library",
      join(dir, "lib.jsonl"),
      "--queries",
      join(dir, "bad.jsonl"),
    ]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("unknown library id nope");
    expect(runCli(["eval", "router", "--queries", join(dir, "q.jsonl")]).status).toBe(2);
    expect(runCli(["eval", "nothing"]).status).toBe(2);
  });
});
