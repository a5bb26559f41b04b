/**
 * Calibrates the router's `similar` constants (edge/routing/router.ts ROUTER_TUNING) on a tuning set: registers
 * the library in a temporary libSQL database, compares every query that reaches the lexical step
 * (re-wordings and out-of-library queries; exact repeats and new numbers are decided before it)
 * with its candidates, then, one constant at a time with the other at its committed value,
 * prints the interval of values in which every in-library query routes to its problem and no
 * query routes anywhere else, and that interval's middle. On stderr, one line per query: where it
 * went and why. Defaults to the tuning set in test/fixtures; never calibrate on a held-out set.
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

  const cases: { q: (typeof queries)[number]; candidates: SimilarCandidate[] }[] = [];
  for (const q of queries) {
    const text = normalizeProblem(q.query);
    const routed = await routeProblem(reader, text);
    if (routed.decision === "answer" || routed.decision === "template") continue;
    cases.push({ q, candidates: await similarCandidates(reader, text) });
  }
  const target = (candidates: SimilarCandidate[], tuning: RouterTuning) => {
    const d = decideSimilar(candidates, tuning);
    return d.problemId ? (entryOf.get(d.problemId) ?? null) : null;
  };
  /** Whether every lexical case is right under these constants. */
  const perfect = (tuning: RouterTuning) =>
    cases.every(({ q, candidates }) => target(candidates, tuning) === q.expect);

  const grid = Array.from({ length: 201 }, (_, i) => i / 200);
  const intervals: Record<string, { lo: number; hi: number; middle: number; committed: number } | null> = {};
  for (const key of Object.keys(ROUTER_TUNING) as (keyof RouterTuning)[]) {
    const ok = grid.filter((v) => perfect({ ...ROUTER_TUNING, [key]: v }));
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
  let wrong = 0;
  let right = 0;
  for (const { q, candidates } of cases) {
    const d = decideSimilar(candidates, ROUTER_TUNING);
    const to = target(candidates, ROUTER_TUNING);
    if (to === q.expect) right++;
    else if (to !== null) wrong++;
    process.stderr.write(
      `${to === q.expect ? "ok   " : to === null ? "miss " : "WRONG"} ${String(q.kind ?? "").padEnd(11)} ` +
        `${String(q.expect).padEnd(22)} -> ${String(to).padEnd(22)} ${d.reason} ${d.score}/${d.runnerUp ?? "-"}  ${q.query}\n`,
    );
  }
  const result = {
    perfectWithCommitted: perfect(ROUTER_TUNING),
    cases: cases.length,
    right,
    wrong,
    intervals,
  };
  process.stdout.write(`${JSON.stringify(result, null, flags.json ? 0 : 2)}\n`);
} finally {
  handle.close();
  rmSync(dir, { recursive: true, force: true });
}
