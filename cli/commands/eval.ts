import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import type { GpuPool } from "../../edge/cluster/gpu-pool.js";
import { type Database, migrateDatabase, openDatabase } from "../../edge/db/client.js";
import { addSolution, registerProblem } from "../../edge/db/library.js";
import { answerDomain } from "../../edge/routing/answer-domain.js";
import { isParametricProfile, profileProgram } from "../../edge/routing/param-probe.js";
import { libraryReader, type RouteKind, routeProblem } from "../../edge/routing/router.js";
import { tryTransfer } from "../../edge/routing/transfer.js";
import { answersEqual } from "../../shared/answers.js";
import { sha256Hex } from "../../shared/hash.js";
import { normalizeProblem, problemTemplate } from "../../shared/normalize.js";
import { adminPost } from "../../tools/eval/stack.js";
import { requireFlag, UsageError } from "../args.js";
import { command, localSandbox } from "../command.js";
import { readJsonl } from "../jsonl.js";
import evalAcceptance from "./eval-acceptance.js";
import evalFlywheel from "./eval-flywheel.js";
import evalSolve from "./eval-solve.js";

const HELP = `usage: kvgraft eval router|solve|flywheel|acceptance ... (each takes --help)

kvgraft eval router --library LIB.jsonl --queries Q.jsonl [--edge URL --admin-key K] [--json]

Routes every query and scores the decisions. Library lines: {id, problem, solution, program,
answer}; query lines: {query, expect, answer?} where expect is a library id or null (out of
library). In-process by default: a temporary libSQL database with the library registered (each
program checked and probed for parameters in the local sandbox), decisions from routeProblem
(edge/routing/router.ts, the function /v1/solve decides with), transfers run in the sandbox. With --edge, the library is deposited through POST /admin/solutions
and the queries are sent to POST /v1/solve (mode library) of that running edge.
JSON (last line): {inLibrary: {n, correct, wilson95}, outOfLibrary: {n, abstained, wilson95},
wrongRoutes, transfer: {n, correct}, p50RouteMs}. Exit 0 when there is no wrong route.`;

const libraryEntrySchema = z.object({
  id: z.string().min(1),
  problem: z.string().min(1),
  solution: z.string().min(1),
  program: z.string().min(1),
  answer: z.string().min(1),
});
export type LibraryEntry = z.infer<typeof libraryEntrySchema>;

const querySchema = z.object({
  query: z.string().min(1),
  expect: z.string().nullable(),
  answer: z.string().optional(),
});
export type EvalQuery = z.infer<typeof querySchema>;

/** What the router did with one query. */
export interface Routed {
  decision: RouteKind;
  /** The library id it was routed to (null when it abstained). */
  id: string | null;
  ms: number;
  /** Set when the query was answered by re-running a parametric program on its numbers. */
  transferAnswer?: string | null;
}

/** The `--json` result. */
export interface RouterEval {
  inLibrary: { n: number; correct: number; wilson95: [number, number] };
  outOfLibrary: { n: number; abstained: number; wilson95: [number, number] };
  wrongRoutes: number;
  transfer: { n: number; correct: number };
  p50RouteMs: number;
}

/** `kvgraft eval router|solve|flywheel|acceptance`. */
export default async function evalCommand(argv: string[]): Promise<number> {
  const [which, ...rest] = argv;
  if (!which || which === "--help" || which === "-h") {
    process.stdout.write(`${HELP}\n`);
    return which ? 0 : 2;
  }
  if (which === "solve") return evalSolve(rest);
  if (which === "flywheel") return evalFlywheel(rest);
  if (which === "acceptance") return evalAcceptance(rest);
  if (which !== "router")
    throw new UsageError(`unknown evaluation '${which}' (available: router, solve, flywheel, acceptance)`);
  return evalRouter(rest);
}

/** `kvgraft eval router`. */
const evalRouter = command(
  {
    help: HELP,
    flags: {
      library: { type: "string" },
      queries: { type: "string" },
      edge: { type: "string" },
      "admin-key": { type: "string" },
    },
  },
  async (flags, out) => {
    const library = await readJsonl(requireFlag(flags.library, "library"), libraryEntrySchema);
    const queries = await readJsonl(requireFlag(flags.queries, "queries"), querySchema);
    const ids = new Set(library.map((e) => e.id));
    for (const q of queries)
      if (q.expect !== null && !ids.has(q.expect))
        throw new UsageError(`query ${JSON.stringify(q.query)} expects unknown library id ${q.expect}`);
    const log = out.progress;
    const routed = flags.edge
      ? await routeOverEdge(flags.edge, requireFlag(flags["admin-key"], "admin-key"), library, queries, log)
      : await routeInProcess(library, queries, log);
    const result = scoreRouting(queries, routed);
    for (const [i, q] of queries.entries()) {
      const r = routed[i] as Routed;
      if (r.id !== q.expect)
        log(`${q.expect === null ? "routed" : "missed"}: ${q.query} -> ${r.decision} ${r.id}`);
    }
    process.stdout.write(
      `in library: ${result.inLibrary.correct}/${result.inLibrary.n} routed right (Wilson 95% ${pct(result.inLibrary.wilson95)}); ` +
        `out of library: ${result.outOfLibrary.abstained}/${result.outOfLibrary.n} abstained (${pct(result.outOfLibrary.wilson95)}); ` +
        `wrong routes ${result.wrongRoutes}; transfer ${result.transfer.correct}/${result.transfer.n}; p50 route ${result.p50RouteMs} ms\n`,
    );
    out.result(result);
    return result.wrongRoutes === 0 ? 0 : 1;
  },
);

/** Scores routed queries against their expectations (see `RouterEval`). */
export function scoreRouting(queries: EvalQuery[], routed: Routed[]): RouterEval {
  let inN = 0;
  let correct = 0;
  let outN = 0;
  let abstained = 0;
  let wrongRoutes = 0;
  let transferN = 0;
  let transferCorrect = 0;
  for (const [i, q] of queries.entries()) {
    const r = routed[i] as Routed;
    if (r.id !== null && r.id !== q.expect) wrongRoutes++;
    if (q.expect === null) {
      outN++;
      if (r.decision === "abstain") abstained++;
    } else {
      inN++;
      if (r.id === q.expect) correct++;
    }
    if (r.transferAnswer !== undefined) {
      transferN++;
      if (r.transferAnswer !== null && q.answer !== undefined && answersEqual(r.transferAnswer, q.answer))
        transferCorrect++;
    }
  }
  return {
    inLibrary: { n: inN, correct, wilson95: wilson95(correct, inN) },
    outOfLibrary: { n: outN, abstained, wilson95: wilson95(abstained, outN) },
    wrongRoutes,
    transfer: { n: transferN, correct: transferCorrect },
    p50RouteMs: median(routed.map((r) => r.ms)),
  };
}

/** The Wilson score interval (95%, z = 1.96) for `k` successes out of `n`, rounded to 4 places. */
export function wilson95(k: number, n: number): [number, number] {
  if (n === 0) return [0, 1];
  const z = 1.959964;
  const p = k / n;
  const z2n = (z * z) / n;
  const center = p + z2n / 2;
  const spread = z * Math.sqrt((p * (1 - p)) / n + z2n / (4 * n));
  const r = (x: number) => Math.round(Math.min(1, Math.max(0, x)) * 10_000) / 10_000;
  return [r((center - spread) / (1 + z2n)), r((center + spread) / (1 + z2n))];
}

/** A local sandbox (the backend KVGRAFT_SANDBOX names) behind the one GpuPool method the deposit checks use. */
export async function localProgramRunner(): Promise<Pick<GpuPool, "runProgram">> {
  const sandbox = await localSandbox();
  return {
    runProgram: (req) => sandbox.run({ source: req.program, params: req.params, expect: req.expect }),
  };
}

/**
 * Registers a library in `db` the way a deposit does, without blocks: the program must print the
 * answer on the problem's numbers (else the solution is stored unverified), and its parameters are
 * profiled (edge/routing/param-probe.ts): parametric when it reads one. Returns problem id -> library id.
 */
export async function registerLibrary(
  db: Database,
  library: LibraryEntry[],
  runner: Pick<GpuPool, "runProgram">,
): Promise<Map<string, string>> {
  const byProblem = new Map<string, string>();
  for (const entry of library) {
    const normalizedText = normalizeProblem(entry.problem);
    const { template, literals } = problemTemplate(normalizedText);
    const fingerprint = await sha256Hex(normalizedText);
    const { problem } = await registerProblem(db, {
      normalizedText,
      fingerprint,
      template,
      params: literals,
    });
    const check = await runner.runProgram({ program: entry.program, params: literals, expect: entry.answer });
    const verified = check.verdict === "ok";
    const probed = verified ? await profileProgram(runner, entry.program, literals, entry.answer) : null;
    const paramProfile = probed?.profile ?? null;
    await addSolution(db, {
      problemId: problem.id,
      worked: entry.solution,
      program: entry.program,
      answer: entry.answer,
      parametric: paramProfile !== null && isParametricProfile(paramProfile),
      verified,
      verification: {
        method: "sandbox",
        verdict: check.verdict,
        params: literals,
        paramProfile,
        answerDomain: probed
          ? answerDomain(normalizedText, literals, entry.answer, probed.profile, probed.runs)
          : null,
      },
    });
    byProblem.set(problem.id, entry.id);
  }
  return byProblem;
}

async function routeInProcess(
  library: LibraryEntry[],
  queries: EvalQuery[],
  log: (line: string) => void,
): Promise<Routed[]> {
  const dir = await mkdtemp(join(tmpdir(), "kvgraft-eval-router-"));
  const handle = await openDatabase({ url: `file:${join(dir, "library.db")}` });
  try {
    await migrateDatabase(handle.db);
    const runner = await localProgramRunner();
    log(`registering ${library.length} problems (programs checked in the sandbox)`);
    const byProblem = await registerLibrary(handle.db, library, runner);
    const clock = { monotonicMs: () => performance.now() };
    const reader = libraryReader(handle.db);
    const routed: Routed[] = [];
    for (const q of queries) {
      const normalized = normalizeProblem(q.query);
      const t0 = performance.now();
      const route = await routeProblem(reader, normalized);
      const ms = performance.now() - t0;
      const id = route.problemId === undefined ? null : (byProblem.get(route.problemId) ?? null);
      const r: Routed = { decision: route.decision, id, ms: Math.round(ms * 1000) / 1000 };
      if (route.matches && id !== null) {
        // The transfer /v1/solve would make (edge/routing/transfer.ts); a refused one counts as no answer.
        const { template, literals } = problemTemplate(normalized);
        const t = await tryTransfer(runner, clock, { normalized, template, literals }, route.matches);
        if (t) r.transferAnswer = t.ok ? t.answer : null;
      }
      routed.push(r);
    }
    return routed;
  } finally {
    handle.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const solveRouteSchema = z.object({
  source: z.string(),
  answer: z.string().nullable(),
  route: z.object({ problemId: z.string().nullable(), decision: z.string().optional() }),
  cost: z.object({ edgeMs: z.number() }),
});

async function routeOverEdge(
  edge: string,
  adminKey: string,
  library: LibraryEntry[],
  queries: EvalQuery[],
  log: (line: string) => void,
): Promise<Routed[]> {
  const post = adminPost(edge, adminKey);
  const byProblem = new Map<string, string>();
  for (const [i, entry] of library.entries()) {
    log(`depositing ${i + 1}/${library.length}: ${entry.id}`);
    const { id: _id, ...body } = entry;
    const out = z
      .object({ problem: z.object({ id: z.string() }) })
      .parse(await post("/admin/solutions", body));
    byProblem.set(out.problem.id, entry.id);
  }
  const routed: Routed[] = [];
  for (const q of queries) {
    const res = solveRouteSchema.parse(await post("/v1/solve", { problem: q.query, mode: "library" }));
    const id =
      res.route.problemId === null ? null : (byProblem.get(res.route.problemId) ?? res.route.problemId);
    const decision = (res.route.decision ?? (id === null ? "abstain" : "similar")) as RouteKind;
    const r: Routed = { decision, id, ms: res.cost.edgeMs };
    if (res.source === "transfer") r.transferAnswer = res.answer;
    routed.push(r);
  }
  return routed;
}

function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const m = s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  return Math.round(m * 1000) / 1000;
}

function pct([lo, hi]: [number, number]): string {
  return `${(lo * 100).toFixed(1)}-${(hi * 100).toFixed(1)}%`;
}
