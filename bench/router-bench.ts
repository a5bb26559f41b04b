/**
 * Router latency on a large library: a fresh libSQL file database (WAL, migrated) holding
 * `problems` problems from tools/router-library.ts (the development library plus generated
 * variants, each with a verified solution), then every query of the tuning set
 * (test/fixtures/router-queries.jsonl) and of the re-wording development set
 * (router-dev-rewordings.jsonl) routed `rounds` times after one warm-up round. Reports p50/p95/p99
 * of `routeProblem` over the reader /v1/solve uses (normalization not included: the edge
 * normalizes once per request for the fast path anyway) and how each set fared against the large
 * library.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrateDatabase, openDatabase } from "../edge/db/client.js";
import { newId } from "../edge/db/ids.js";
import { problems, solutions } from "../edge/db/schema.js";
import { libraryReader, type RouteKind, routeProblem } from "../edge/routing/router.js";
import { sha256Hex } from "../shared/hash.js";
import { NORMALIZE_VERSION, normalizeProblem, problemTemplate } from "../shared/normalize.js";
import { devFixture, generateRouterLibrary } from "../tools/router-library.js";

export interface RouterBenchOptions {
  problems: number;
  rounds: number;
  log?: (line: string) => void;
}

export interface RouterBenchResult {
  problems: number;
  queries: number;
  samples: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The routes that reached the lexical step (decided `similar` or `abstain`). */
  lexical: { samples: number; p50Ms: number; p95Ms: number; p99Ms: number };
  decisions: Record<RouteKind, number>;
  /** Each query set against the large library: routed to their problem / abstained. */
  sets: { tuning: SetOutcome; rewordings: SetOutcome };
  loadS: number;
}

/** How one query set fared. */
export interface SetOutcome {
  inLibrary: number;
  inLibraryCorrect: number;
  outOfLibrary: number;
  abstained: number;
  wrongRoutes: number;
}

/** Builds the library and times the router (see the module comment). */
export async function benchRouter(options: RouterBenchOptions): Promise<RouterBenchResult> {
  const log = options.log ?? (() => undefined);
  const dir = await mkdtemp(join(tmpdir(), "kvgraft-bench-router-"));
  const handle = await openDatabase({ url: `file:${join(dir, "library.db")}` });
  try {
    const { db } = handle;
    await migrateDatabase(db);
    const loadStart = performance.now();
    const library = generateRouterLibrary(options.problems);
    const devIds = new Map<string, string>();
    for (let i = 0; i < library.length; i += 500) {
      const rows = await Promise.all(
        library.slice(i, i + 500).map(async (e) => {
          const normalizedText = normalizeProblem(e.problem);
          const { template, literals } = problemTemplate(normalizedText);
          const id = newId("prb");
          if (e.id === e.seed) devIds.set(id, e.id);
          const fingerprint = await sha256Hex(normalizedText);
          return {
            id,
            normalizedText,
            fingerprint,
            template,
            params: literals,
            normalizeVersion: NORMALIZE_VERSION,
          };
        }),
      );
      await db.insert(problems).values(rows);
      await db.insert(solutions).values(
        rows.map((r) => ({
          id: newId("sol"),
          problemId: r.id,
          worked: "generated",
          program: null,
          answer: "0",
          parametric: false,
          verified: true,
          verification: { method: "bench" },
        })),
      );
      log(`library: ${Math.min(i + 500, library.length)}/${library.length} problems`);
    }
    const loadS = (performance.now() - loadStart) / 1000;

    type Query = { query: string; expect: string | null; set: keyof RouterBenchResult["sets"] };
    const queries: Query[] = [
      ...devFixture<Query>("router-queries.jsonl").map((q) => ({ ...q, set: "tuning" as const })),
      ...devFixture<Query>("router-dev-rewordings.jsonl").map((q) => ({ ...q, set: "rewordings" as const })),
    ];
    const normalized = queries.map((q) => normalizeProblem(q.query));
    // The decision /v1/solve makes (edge/services/solve.service.ts calls the same function and reader).
    const reader = libraryReader(db);
    const times: number[] = [];
    const lexicalTimes: number[] = [];
    const decisions: Record<RouteKind, number> = { answer: 0, template: 0, similar: 0, abstain: 0 };
    const outcome = (): SetOutcome => ({
      inLibrary: 0,
      inLibraryCorrect: 0,
      outOfLibrary: 0,
      abstained: 0,
      wrongRoutes: 0,
    });
    const sets = { tuning: outcome(), rewordings: outcome() };
    for (let round = 0; round <= options.rounds; round++) {
      for (const [i, text] of normalized.entries()) {
        const t0 = performance.now();
        const r = await routeProblem(reader, text);
        const ms = performance.now() - t0;
        if (round === 0) {
          // The warm-up round scores the decisions; the timed rounds repeat them.
          const q = queries[i] as Query;
          const expected = q.expect;
          const dev = sets[q.set];
          const id = r.problemId === undefined ? null : (devIds.get(r.problemId) ?? r.problemId);
          if (expected === null) {
            dev.outOfLibrary++;
            if (r.decision === "abstain") dev.abstained++;
          } else {
            dev.inLibrary++;
            if (id === expected) dev.inLibraryCorrect++;
          }
          if (id !== null && id !== expected) dev.wrongRoutes++;
          continue;
        }
        times.push(ms);
        if (r.decision === "similar" || r.decision === "abstain") lexicalTimes.push(ms);
        decisions[r.decision]++;
      }
      if (round > 0) log(`round ${round}/${options.rounds}`);
    }
    const q = (xs: number[], p: number) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return round3(sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? 0);
    };
    return {
      problems: library.length,
      queries: queries.length,
      samples: times.length,
      p50Ms: q(times, 0.5),
      p95Ms: q(times, 0.95),
      p99Ms: q(times, 0.99),
      maxMs: q(times, 1),
      lexical: {
        samples: lexicalTimes.length,
        p50Ms: q(lexicalTimes, 0.5),
        p95Ms: q(lexicalTimes, 0.95),
        p99Ms: q(lexicalTimes, 0.99),
      },
      decisions,
      sets,
      loadS: round3(loadS),
    };
  } finally {
    handle.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
