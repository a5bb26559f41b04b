/** Lexical search over the library's templates: FTS5 with BM25 ranking (problems_fts). */
import { sql } from "drizzle-orm";
import type { Database } from "./database.js";

/** A lexical routing candidate; `score` is the negated BM25 rank, so higher is better. */
export interface TemplateCandidate {
  template: string;
  /** The oldest problem with this template. */
  problemId: string;
  score: number;
}

/** Most distinct words a search uses (the rest of a long text adds little). */
export const MAX_QUERY_TOKENS = 64;
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

/** `value` as an integer within [min, max] (`min` when it is not a finite number). */
export function clamp(value: number, min: number, max: number): number {
  return Number.isFinite(value) ? Math.min(Math.max(Math.trunc(value), min), max) : min;
}
