/**
 * Calibrates the router's `similar` constants (edge/routing/router.ts ROUTER_TUNING) on a tuning
 * set: registers the library in a temporary libSQL database, compares every query that reaches
 * the lexical step (re-wordings and out-of-library queries; exact repeats and new numbers are
 * decided before it) with its candidates, then, one constant at a time with the others at their committed values,
 * prints the interval of values in which every in-library query routes to its problem and no
 * query routes anywhere else, and that interval's middle; and, for each `softMatch` (the least
 * cosine of a soft concept match), how many lexical queries route right and how many wrong, since
 * a set that no constants make perfect is compared by those counts. On stderr, one line per
 * query: where it went and why, with the concepts matched softly. Defaults to the tuning set in
 * test/fixtures; never calibrate on a held-out set.
 * Usage: npx tsx scripts/calibrate-router.ts [--library LIB.jsonl] [--queries Q.jsonl] [--json]
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseFlags } from "../cli/args.js";
import { migrateDatabase, openDatabase } from "../edge/db/client.js";
import { registerProblem } from "../edge/db/library.js";
import {
  decideSimilar,
  libraryReader,
  ROUTER_TUNING,
  type RouterTuning,
  routeProblem,
  type SimilarCandidate,
  similarCandidates,
} from "../edge/routing/router.js";
import { sha256Hex } from "../shared/hash.js";
import { normalizeProblem, problemTemplate } from "../shared/normalize.js";

const flags = parseFlags(process.argv.slice(2), {
  library: { type: "string", default: "test/fixtures/router-library.jsonl" },
  queries: { type: "string", default: "test/fixtures/router-queries.jsonl" },
  json: { type: "boolean", default: false },
});
const jsonl = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));
const library = jsonl(flags.library as string) as { id: string; problem: string }[];
const queries = jsonl(flags.queries as string) as { query: string; expect: string | null; kind?: string }[];

const dir = mkdtempSync(join(tmpdir(), "kvgraft-calibrate-"));
const handle = await openDatabase({ url: `file:${join(dir, "library.db")}` });
try {
  await migrateDatabase(handle.db);
  const reader = libraryReader(handle.db);
  const entryOf = new Map<string, string>();
  for (const e of library) {
    const normalizedText = normalizeProblem(e.problem);
    const { template, params } = problemTemplate(normalizedText);
    const fingerprint = await sha256Hex(normalizedText);
    const { problem } = await registerProblem(handle.db, { normalizedText, fingerprint, template, params });
    entryOf.set(problem.id, e.id);
  }

  const lexicalQueries: { q: (typeof queries)[number]; text: string }[] = [];
  for (const q of queries) {
    const text = normalizeProblem(q.query);
    const routed = await routeProblem(reader, text);
    if (routed.decision !== "answer" && routed.decision !== "template") lexicalQueries.push({ q, text });
  }
  /** The compared candidates of each lexical query, by `softMatch` (the overlap scores depend on it). */
  const casesBySoftMatch = new Map<
    number,
    { q: (typeof queries)[number]; candidates: SimilarCandidate[] }[]
  >();
  const casesAt = async (softMatch: number) => {
    let cases = casesBySoftMatch.get(softMatch);
    if (!cases) {
      cases = [];
      for (const { q, text } of lexicalQueries)
        cases.push({ q, candidates: await similarCandidates(reader, text, softMatch) });
      casesBySoftMatch.set(softMatch, cases);
    }
    return cases;
  };
  const target = (candidates: SimilarCandidate[], tuning: RouterTuning) => {
    const d = decideSimilar(candidates, tuning);
    return d.problemId ? (entryOf.get(d.problemId) ?? null) : null;
  };
  /** How many lexical cases route right, and how many to a wrong problem, under these constants. */
  const tally = async (tuning: RouterTuning) => {
    let right = 0;
    let wrong = 0;
    for (const { q, candidates } of await casesAt(tuning.softMatch)) {
      const to = target(candidates, tuning);
      if (to === q.expect) right++;
      else if (to !== null) wrong++;
    }
    return { right, wrong };
  };
  const perfect = async (tuning: RouterTuning) => (await tally(tuning)).right === lexicalQueries.length;

  // `softMatch` re-scores every candidate, so its grid is coarser; above 1 is off.
  const grids: Record<keyof RouterTuning, number[]> = {
    threshold: Array.from({ length: 201 }, (_, i) => i / 200),
    margin: Array.from({ length: 201 }, (_, i) => i / 200),
    softMatch: Array.from({ length: 16 }, (_, i) => Math.round((0.3 + i * 0.05) * 100) / 100),
  };
  const intervals: Record<string, { lo: number; hi: number; middle: number; committed: number } | null> = {};
  for (const key of Object.keys(ROUTER_TUNING) as (keyof RouterTuning)[]) {
    const ok: number[] = [];
    for (const v of grids[key]) if (await perfect({ ...ROUTER_TUNING, [key]: v })) ok.push(v);
    intervals[key] =
      ok.length === 0
        ? null
        : {
            lo: Math.min(...ok),
            hi: Math.max(...ok),
            middle: Math.round(((Math.min(...ok) + Math.max(...ok)) / 2) * 1000) / 1000,
            committed: ROUTER_TUNING[key],
          };
  }
  // Where the whole set cannot come out right, what each `softMatch` gains and costs.
  const softMatchSweep = [];
  for (const v of grids.softMatch)
    softMatchSweep.push({ softMatch: v, ...(await tally({ ...ROUTER_TUNING, softMatch: v })) });
  const cases = await casesAt(ROUTER_TUNING.softMatch);
  let wrong = 0;
  let right = 0;
  for (const { q, candidates } of cases) {
    const d = decideSimilar(candidates, ROUTER_TUNING);
    const to = target(candidates, ROUTER_TUNING);
    if (to === q.expect) right++;
    else if (to !== null) wrong++;
    process.stderr.write(
      `${to === q.expect ? "ok   " : to === null ? "miss " : "WRONG"} ${String(q.kind ?? "").padEnd(11)} ` +
        `${String(q.expect).padEnd(22)} -> ${String(to).padEnd(22)} ${d.reason} ${d.score}/${d.runnerUp ?? "-"}  ${q.query}` +
        `${d.softMatches ? `  [soft: ${d.softMatches.join(", ")}]` : ""}\n`,
    );
  }
  const result = {
    perfectWithCommitted: await perfect(ROUTER_TUNING),
    cases: cases.length,
    right,
    wrong,
    intervals,
    softMatchSweep,
  };
  process.stdout.write(`${JSON.stringify(result, null, flags.json ? 0 : 2)}\n`);
} finally {
  handle.close();
  rmSync(dir, { recursive: true, force: true });
}
