/**
 * The library over the database: problems, their verified solutions (versioned) and blocks, the
 * lookups routing uses, and the query log. Plain functions over a `Database`, runtime-neutral (Node
 * and Workers). Lexical search is in library-search.ts, the listing pages in library-pages.ts.
 */
import { and, asc, desc, eq, inArray, isNull, ne, sql } from "drizzle-orm";
import { conflict, notFound } from "../../shared/errors.js";
import { NORMALIZE_VERSION } from "../../shared/normalize.js";
import type { Database } from "./database.js";
import { type FingerprintValue, fingerprintKey } from "./fingerprint.js";
import { newId } from "./ids.js";
import { type BlockState, blocks, problems, queries, solutions } from "./schema.js";

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

/** A block by its SHA-256, or null. */
export async function findBlock(db: Database, sha256: string): Promise<Block | null> {
  const [row] = await db.select().from(blocks).where(eq(blocks.sha256, sha256));
  return row ?? null;
}

/** The problem's newest ready block, or null. */
export async function newestReadyBlock(db: Database, problemId: string): Promise<Block | null> {
  const [row] = await db
    .select()
    .from(blocks)
    .where(and(eq(blocks.problemId, problemId), eq(blocks.state, "ready")))
    .orderBy(desc(blocks.createdAt))
    .limit(1);
  return row ?? null;
}

/**
 * Marks the problem's ready blocks other than `keepBlock` superseded (their text holds a replaced
 * solution, so a graft must never use them); returns their ids.
 */
export async function supersedeReadyBlocks(
  db: Database,
  problemId: string,
  keepBlock: string,
): Promise<string[]> {
  const rows = await db
    .update(blocks)
    .set({ state: "superseded" })
    .where(and(eq(blocks.problemId, problemId), eq(blocks.state, "ready"), ne(blocks.sha256, keepBlock)))
    .returning({ sha256: blocks.sha256 });
  return rows.map((r) => r.sha256);
}

/** The ids of quarantined and superseded blocks (they must not stay on GPU nodes). */
export async function retiredBlockIds(db: Database): Promise<string[]> {
  const rows = await db
    .select({ sha256: blocks.sha256 })
    .from(blocks)
    .where(inArray(blocks.state, ["quarantined", "superseded"]));
  return rows.map((r) => r.sha256);
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

/** 404 `problem_not_found` unless a problem with this id exists. */
export async function requireProblem(db: Database, problemId: string): Promise<void> {
  const [row] = await db.select({ id: problems.id }).from(problems).where(eq(problems.id, problemId));
  if (!row) throw notFound("problem_not_found", "No problem with this id.");
}
