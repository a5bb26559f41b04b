/**
 * Calibrates the router's `similar` constants (edge/routing/router.ts ROUTER_TUNING) on the development set:
 * registers test/fixtures/router-library.jsonl in a temporary libSQL database, collects the best
 * candidate's features for every query the lexical step decides (paraphrases and out-of-library
 * queries; exact repeats and new numbers are decided before it), then, one constant at a time with
 * the others at their committed values, prints the interval of values in which every paraphrase
 * routes to its problem and no out-of-library query routes anywhere, and that interval's middle.
 * Usage: npx tsx scripts/calibrate-router.ts [--json]
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrateDatabase, openDatabase } from "../edge/db/client.js";
import { registerProblem } from "../edge/db/library.js";
import {
  bestCandidate,
  type CandidateFeatures,
  decideSimilar,
  ROUTER_TUNING,
  type RouterTuning,
  routeSimilar,
} from "../edge/routing/router.js";
import { sha256Hex } from "../shared/hash.js";
import { normalizeProblem, problemTemplate } from "../shared/normalize.js";

const fixture = (name: string) =>
  readFileSync(new URL(`../test/fixtures/${name}`, import.meta.url), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));
const library = fixture("router-library.jsonl") as { id: string; problem: string }[];
const queries = fixture("router-queries.jsonl") as { query: string; expect: string | null; kind: string }[];

const dir = mkdtempSync(join(tmpdir(), "kvgraft-calibrate-"));
const handle = await openDatabase({ url: `file:${join(dir, "library.db")}` });
try {
  await migrateDatabase(handle.db);
  const byProblem = new Map<string, string>();
  for (const e of library) {
    const normalizedText = normalizeProblem(e.problem);
    const { template, params } = problemTemplate(normalizedText);
    const fingerprint = await sha256Hex(normalizedText);
    const { problem } = await registerProblem(handle.db, { normalizedText, fingerprint, template, params });
    byProblem.set(problem.id, e.id);
  }

  // Per query: the lexical features, and where it goes when only the numbers check applies.
  const accept: RouterTuning = {
    threshold: 0,
    margin: Number.NEGATIVE_INFINITY,
    minRewrite: 0,
    minRewriteNoNewWords: 0,
  };
  const cases: { q: (typeof queries)[number]; f: CandidateFeatures | null; target: string | null }[] = [];
  for (const q of queries.filter((x) => x.kind !== "exact" && x.kind !== "new_numbers")) {
    const text = normalizeProblem(q.query);
    const f = await bestCandidate(handle.db, text);
    const open = await routeSimilar(handle.db, text, accept);
    cases.push({ q, f, target: open.problemId ? (byProblem.get(open.problemId) ?? null) : null });
  }

  /** Whether the dev set is all right under these constants. */
  const perfect = (tuning: RouterTuning) =>
    cases.every(({ q, f, target }) => {
      const routedTo = decideSimilar(f, tuning).decision === "similar" ? target : null;
      return routedTo === q.expect;
    });

  const report: Record<string, { lo: number; hi: number; middle: number; committed: number }> = {};
  const grid = (lo: number, hi: number, step: number) =>
    Array.from(
      { length: Math.round((hi - lo) / step) + 1 },
      (_, i) => Math.round((lo + i * step) * 1000) / 1000,
    );
  for (const key of Object.keys(ROUTER_TUNING) as (keyof RouterTuning)[]) {
    const ok = grid(0, 1, 0.005).filter((v) => perfect({ ...ROUTER_TUNING, [key]: v }));
    const lo = Math.min(...ok);
    const hi = Math.max(...ok);
    report[key] = {
      lo,
      hi,
      middle: Math.round(((lo + hi) / 2) * 1000) / 1000,
      committed: ROUTER_TUNING[key],
    };
  }
  for (const { q, f, target } of cases)
    process.stderr.write(
      `${q.kind.padEnd(11)} ${String(q.expect).padEnd(22)} -> ${String(target).padEnd(22)} ` +
        (f
          ? `score ${f.score.toFixed(2)} runner-up ${f.runnerUp.toFixed(2)} edit ${f.editRatio.toFixed(2)}${f.noNewWords ? " no-new-words" : ""}`
          : "no candidates") +
        ` => ${decideSimilar(f, ROUTER_TUNING).reason}\n`,
    );
  const result = { perfectWithCommitted: perfect(ROUTER_TUNING), cases: cases.length, intervals: report };
  process.stdout.write(`${JSON.stringify(result, null, process.argv.includes("--json") ? 0 : 2)}\n`);
} finally {
  handle.close();
  rmSync(dir, { recursive: true, force: true });
}
