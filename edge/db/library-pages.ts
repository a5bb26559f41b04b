/** The library as pages of summaries (`GET /v1/library`, searchable) and as whole entries (`GET /v1/library/:id`). */
import { and, asc, eq, gt, inArray, isNull, sql } from "drizzle-orm";
import { badRequest } from "../../shared/errors.js";
import type { Database } from "./database.js";
import { isId } from "./ids.js";
import type { Block, Problem, Solution } from "./library.js";
import { clamp, MAX_QUERY_TOKENS } from "./library-search.js";
import { type BlockState, blocks, problems, solutions } from "./schema.js";

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
