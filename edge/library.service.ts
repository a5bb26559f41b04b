/**
 * The library over the database: problems, their verified solutions and blocks, lexical search
 * over templates, and the query log. Plain functions over a `Database`, runtime-neutral (Node and
 * Workers). The flywheel queue and the node registry live next to it in edge/db and are re-exported
 * here so routes import the whole data layer from one place.
 */
import { and, asc, desc, eq, gt, inArray, isNull, ne, sql } from "drizzle-orm";
import { badRequest, conflict, notFound } from "../shared/errors.js";
import { NORMALIZE_VERSION } from "../shared/normalize.js";
import type { Database } from "./db/database.js";
import { type FingerprintValue, fingerprintKey } from "./db/fingerprint.js";
import { isId, newId } from "./db/ids.js";
import { type BlockState, blocks, problems, queries, solutions } from "./db/schema.js";

export * from "./db/flywheel-queue.js";
export * from "./db/nodes.js";

export type Problem = typeof problems.$inferSelect;
export type Solution = typeof solutions.$inferSelect;
export type Block = typeof blocks.$inferSelect;

/** A problem as shared/normalize produced it (`problemTemplate` gives template and params). */
export interface ProblemInput {
  normalizedText: string;
  fingerprint: string;
  template: string;
  /** Exact literals (`problemTemplate().literals`); numbers are accepted from older callers. */
  params: readonly (number | string)[];
}

/**
 * Registers a problem once per fingerprint; a repeat returns the stored row with `created: false`.
 * A row of an older normalization with this fingerprint is brought up to this one (its text,
 * template and numbers are this normalization's, and only such rows answer queries).
 */
export async function registerProblem(
  db: Database,
  input: ProblemInput,
): Promise<{ problem: Problem; created: boolean }> {
  const current = {
    normalizedText: input.normalizedText,
    template: input.template,
    params: [...input.params],
    normalizeVersion: NORMALIZE_VERSION,
  };
  const [inserted] = await db
    .insert(problems)
    .values({ id: newId("prb"), fingerprint: input.fingerprint, ...current })
    .onConflictDoNothing({ target: problems.fingerprint })
    .returning();
  if (inserted) return { problem: inserted, created: true };
  const [upgraded] = await db
    .update(problems)
    .set(current)
    .where(and(eq(problems.fingerprint, input.fingerprint), ne(problems.normalizeVersion, NORMALIZE_VERSION)))
    .returning();
  if (upgraded) return { problem: upgraded, created: false };
  const [existing] = await db.select().from(problems).where(eq(problems.fingerprint, input.fingerprint));
  if (!existing) throw new Error(`problem ${input.fingerprint} neither inserted nor found`);
  return { problem: existing, created: false };
}

/** A worked solution; `verified` is the verdict, `verification` the evidence (program run, hashes). */
export interface SolutionInput {
  problemId: string;
  worked: string;
  program: string | null;
  answer: string;
  parametric: boolean;
  verified: boolean;
  verification: Record<string, unknown>;
}

/** Adds a solution to a registered problem, numbered one past the problem's last solution. */
export async function addSolution(db: Database, input: SolutionInput): Promise<Solution> {
  await requireProblem(db, input.problemId);
  const [row] = await db
    .insert(solutions)
    .values({
      id: newId("sol"),
      problemId: input.problemId,
      // One statement: two deposits at once cannot take the same number (the unique index refuses).
      version: sql`(SELECT coalesce(max(${solutions.version}), 0) + 1 FROM ${solutions} WHERE ${solutions.problemId} = ${input.problemId})`,
      worked: input.worked,
      program: input.program,
      answer: input.answer,
      parametric: input.parametric,
      verified: input.verified,
      verification: input.verification,
    })
    .returning();
  if (!row) throw new Error("solution insert returned no row");
  return row;
}

/**
 * Marks every other solution of the problem that is not superseded yet as replaced by `by` (kept
 * for audit; they never answer again), so that one solution is current even after two deposits
 * raced; returns the rows it changed.
 */
export async function supersedeSolutions(
  db: Database,
  input: { problemId: string; by: string; at: Date },
): Promise<Solution[]> {
  return db
    .update(solutions)
    .set({ supersededAt: input.at, supersededBy: input.by })
    .where(
      and(
        eq(solutions.problemId, input.problemId),
        ne(solutions.id, input.by),
        isNull(solutions.supersededAt),
      ),
    )
    .returning();
}

/** The manifest fields the edge routes on; the whole manifest is stored as JSON beside them. */
export interface BlockManifestFields {
  tokenCount: number;
  tokensSha256: string;
  textSha256: string;
  modelFingerprint: FingerprintValue;
  engineFingerprint: FingerprintValue;
}

/** A block as a node reports it after a deposit. */
export interface BlockInput {
  sha256: string;
  problemId: string;
  manifest: BlockManifestFields & Record<string, unknown>;
  state: BlockState;
  nodeId: string | null;
}

/**
 * Registers a block. Blocks are content-addressed, so registering the same bytes again updates
 * where they live and their state; the same bytes claimed for another problem are a conflict.
 */
export async function registerBlock(db: Database, input: BlockInput): Promise<Block> {
  await requireProblem(db, input.problemId);
  const { manifest } = input;
  const values = {
    sha256: input.sha256,
    problemId: input.problemId,
    tokenCount: manifest.tokenCount,
    tokensSha256: manifest.tokensSha256,
    textSha256: manifest.textSha256,
    modelFingerprint: fingerprintKey(manifest.modelFingerprint),
    engineFingerprint: fingerprintKey(manifest.engineFingerprint),
    manifest,
    state: input.state,
    nodeId: input.nodeId,
  };
  const [row] = await db
    .insert(blocks)
    .values(values)
    .onConflictDoUpdate({
      target: blocks.sha256,
      set: { state: values.state, nodeId: values.nodeId },
      setWhere: eq(blocks.problemId, values.problemId),
    })
    .returning();
  if (row) return row;
  throw conflict("block_problem_mismatch", "This block is already registered for another problem.", {
    sha256: input.sha256,
  });
}

/** Moves a block to a new state (a failed hash check quarantines it). */
export async function setBlockState(db: Database, sha256: string, state: BlockState): Promise<Block> {
  const [row] = await db.update(blocks).set({ state }).where(eq(blocks.sha256, sha256)).returning();
  if (!row) throw notFound("block_not_found", "No block with this SHA-256.");
  return row;
}

/** The fast path: a verified answer for exactly this problem. */
export interface VerifiedAnswer {
  problem: Problem;
  solution: Solution;
  answer: string;
}

/** The current solution of the problem with this fingerprint (newest verified, not superseded), or null. */
export async function findVerifiedByFingerprint(
  db: Database,
  fingerprint: string,
): Promise<VerifiedAnswer | null> {
  const [row] = await db
    .select({ problem: problems, solution: solutions })
    .from(problems)
    .innerJoin(
      solutions,
      and(eq(solutions.problemId, problems.id), eq(solutions.verified, true), isNull(solutions.supersededAt)),
    )
    .where(and(eq(problems.fingerprint, fingerprint), eq(problems.normalizeVersion, NORMALIZE_VERSION)))
    .orderBy(desc(solutions.id))
    .limit(1);
  return row ? { ...row, answer: row.solution.answer } : null;
}

/** A problem of a template with what routing can use: its current solution and ready blocks. */
export interface TemplateMatch {
  problem: Problem;
  solution: Solution | null;
  blocks: Block[];
}

/** Every problem with exactly this template (of this normalization), oldest first. */
export async function findByTemplate(db: Database, template: string): Promise<TemplateMatch[]> {
  const rows = await db
    .select()
    .from(problems)
    .where(and(eq(problems.template, template), eq(problems.normalizeVersion, NORMALIZE_VERSION)))
    .orderBy(asc(problems.id));
  const ids = rows.map((p) => p.id);
  if (ids.length === 0) return [];
  const [verified, ready] = await Promise.all([
    db
      .select()
      .from(solutions)
      .where(
        and(inArray(solutions.problemId, ids), eq(solutions.verified, true), isNull(solutions.supersededAt)),
      )
      .orderBy(asc(solutions.id)),
    db
      .select()
      .from(blocks)
      .where(and(inArray(blocks.problemId, ids), eq(blocks.state, "ready")))
      .orderBy(asc(blocks.createdAt)),
  ]);
  return rows.map((problem) => ({
    problem,
    // ascending order, so the last one per problem is the newest
    solution: verified.filter((s) => s.problemId === problem.id).at(-1) ?? null,
    blocks: ready.filter((b) => b.problemId === problem.id),
  }));
}

/** A lexical routing candidate; `score` is the negated BM25 rank, so higher is better. */
export interface TemplateCandidate {
  template: string;
  /** The oldest problem with this template. */
  problemId: string;
  score: number;
}

const MAX_QUERY_TOKENS = 64;
const MAX_CANDIDATES = 50;

/**
 * An FTS5 MATCH expression that only ever means "any of these words": every word of the text
 * becomes a quoted string joined by OR. The words hold letters and digits only, so no quote,
 * `*`, `^`, `:`, parenthesis or bare operator (AND/OR/NOT/NEAR) survives as syntax. Null when
 * the text has no words.
 */
export function toFtsQuery(text: string): string | null {
  const words =
    text
      .normalize("NFKC")
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  const unique = [...new Set(words)].slice(0, MAX_QUERY_TOKENS);
  return unique.length === 0 ? null : unique.map((w) => `"${w}"`).join(" OR ");
}

/**
 * The `k` templates most similar to `templateText` by BM25 over the FTS5 index (one row per
 * distinct template), best first.
 */
export async function searchTemplates(
  db: Database,
  templateText: string,
  k: number,
): Promise<TemplateCandidate[]> {
  const match = toFtsQuery(templateText);
  const limit = clamp(k, 1, MAX_CANDIDATES);
  if (match === null) return [];
  // MATERIALIZED keeps the FTS scan its own step: bm25() is not allowed in a query SQLite
  // flattens it into.
  const rows = await db.all<{ template: string; problem_id: string; rank: number }>(sql`
    WITH hits AS MATERIALIZED (
      SELECT template, bm25(problems_fts) AS rank FROM problems_fts WHERE problems_fts MATCH ${match}
      ORDER BY rank LIMIT ${limit}
    )
    SELECT template, rank, (SELECT min(id) FROM problems WHERE problems.template = hits.template) AS problem_id
    FROM hits ORDER BY rank, template`);
  return rows.map((r) => ({ template: r.template, problemId: r.problem_id, score: -r.rank }));
}

/** One library entry with all its solutions and blocks. */
export interface LibraryItem {
  problem: Problem;
  solutions: Solution[];
  blocks: Block[];
}

/**
 * One library entry in a list: the problem, its current answer and the block a graft would use.
 * Worked solutions, programs, verification records and manifests are on the detail route.
 */
export interface LibrarySummary {
  id: string;
  problem: string;
  template: string;
  /** The current solution's answer (newest verified, not superseded), else null. */
  answer: string | null;
  solution: { id: string; version: number; parametric: boolean } | null;
  /** The newest ready block, else null. */
  block: { sha256: string; tokenCount: number; state: BlockState } | null;
  createdAt: Date;
}

/** A page of the library in creation order; pass `nextCursor` back to get the next page. */
export interface LibraryPage {
  items: LibrarySummary[];
  nextCursor: string | null;
}

/**
 * Lists the library as summaries, `limit` (clamped to 1..100) entries after `cursor`; with `q`,
 * only problems that contain every word of it (words match the problem's wording through the
 * FTS5 template index, stemmed and case-insensitive; numbers match its numbers).
 */
export async function listLibrary(
  db: Database,
  options: { limit: number; cursor?: string | null; q?: string | null },
): Promise<LibraryPage> {
  const limit = clamp(options.limit, 1, 100);
  const cursor = options.cursor ?? null;
  if (cursor !== null && !isId("prb", cursor)) throw badRequest("cursor_invalid", "The cursor is not valid.");
  const search = options.q ? searchCondition(options.q) : undefined;
  if (search === null) return { items: [], nextCursor: null };
  const page = await db
    .select()
    .from(problems)
    .where(and(cursor === null ? undefined : gt(problems.id, cursor), search))
    .orderBy(asc(problems.id))
    .limit(limit + 1);
  const more = page.length > limit;
  const items = await summaries(db, page.slice(0, limit));
  return { items, nextCursor: more ? (items.at(-1)?.id ?? null) : null };
}

/**
 * The WHERE condition of a library search: every word in the FTS5 index of templates (each a
 * quoted string, so no FTS syntax survives), every number inside the problem's text. Null when
 * the text has no words (nothing can match).
 */
function searchCondition(q: string) {
  const tokens = [
    ...new Set(
      q
        .normalize("NFKC")
        .toLowerCase()
        .match(/[\p{L}\p{N}]+/gu) ?? [],
    ),
  ].slice(0, MAX_QUERY_TOKENS);
  if (tokens.length === 0) return null;
  const numbers = tokens.filter((t) => /^\p{N}+$/u.test(t));
  const words = tokens.filter((t) => !/^\p{N}+$/u.test(t));
  const conditions = numbers.map((n) => sql`instr(${problems.normalizedText}, ${n}) > 0`);
  if (words.length > 0) {
    const match = words.map((w) => `"${w}"`).join(" AND ");
    conditions.push(
      sql`${problems.template} IN (SELECT template FROM problems_fts WHERE problems_fts MATCH ${match})`,
    );
  }
  return and(...conditions);
}

/** One library entry by problem id, or null. */
export async function getLibraryItem(db: Database, id: string): Promise<LibraryItem | null> {
  const [problem] = await db.select().from(problems).where(eq(problems.id, id));
  if (!problem) return null;
  const [item] = await withDetails(db, [problem]);
  return item ?? null;
}

/** What one answered query did, for the log. */
export interface QueryLogInput {
  keyId: string | null;
  fingerprint: string;
  route: Record<string, unknown>;
  source: string;
  cost: Record<string, unknown>;
  confidence: number | null;
  verified: boolean;
}

/** Appends a query to the log and returns its id. */
export async function logQuery(db: Database, input: QueryLogInput): Promise<string> {
  const id = newId("qry");
  await db.insert(queries).values({
    id,
    keyId: input.keyId,
    fingerprint: input.fingerprint,
    route: input.route,
    source: input.source,
    cost: input.cost,
    confidence: input.confidence,
    verified: input.verified,
  });
  return id;
}

async function requireProblem(db: Database, problemId: string): Promise<void> {
  const [row] = await db.select({ id: problems.id }).from(problems).where(eq(problems.id, problemId));
  if (!row) throw notFound("problem_not_found", "No problem with this id.");
}

async function summaries(db: Database, page: Problem[]): Promise<LibrarySummary[]> {
  const ids = page.map((p) => p.id);
  if (ids.length === 0) return [];
  const [current, ready] = await Promise.all([
    db
      .select({
        id: solutions.id,
        problemId: solutions.problemId,
        version: solutions.version,
        parametric: solutions.parametric,
        answer: solutions.answer,
      })
      .from(solutions)
      .where(
        and(inArray(solutions.problemId, ids), eq(solutions.verified, true), isNull(solutions.supersededAt)),
      )
      .orderBy(asc(solutions.id)),
    db
      .select({
        sha256: blocks.sha256,
        problemId: blocks.problemId,
        tokenCount: blocks.tokenCount,
        state: blocks.state,
      })
      .from(blocks)
      .where(and(inArray(blocks.problemId, ids), eq(blocks.state, "ready")))
      .orderBy(asc(blocks.createdAt)),
  ]);
  return page.map((p) => {
    // ascending order, so the last one per problem is the newest
    const solution = current.filter((s) => s.problemId === p.id).at(-1);
    const block = ready.filter((b) => b.problemId === p.id).at(-1);
    return {
      id: p.id,
      problem: p.normalizedText,
      template: p.template,
      answer: solution?.answer ?? null,
      solution: solution
        ? { id: solution.id, version: solution.version, parametric: solution.parametric }
        : null,
      block: block ? { sha256: block.sha256, tokenCount: block.tokenCount, state: block.state } : null,
      createdAt: p.createdAt,
    };
  });
}

async function withDetails(db: Database, page: Problem[]): Promise<LibraryItem[]> {
  const ids = page.map((p) => p.id);
  if (ids.length === 0) return [];
  const [sols, blks] = await Promise.all([
    db.select().from(solutions).where(inArray(solutions.problemId, ids)).orderBy(asc(solutions.id)),
    db.select().from(blocks).where(inArray(blocks.problemId, ids)).orderBy(asc(blocks.createdAt)),
  ]);
  return page.map((problem) => ({
    problem,
    solutions: sols.filter((s) => s.problemId === problem.id),
    blocks: blks.filter((b) => b.problemId === problem.id),
  }));
}

function clamp(value: number, min: number, max: number): number {
  return Number.isFinite(value) ? Math.min(Math.max(Math.trunc(value), min), max) : min;
}
