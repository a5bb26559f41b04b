/** Lexical search over the library's templates: FTS5 with BM25 ranking (problems_fts). */
import { sql } from "drizzle-orm";
import { NORMALIZE_VERSION } from "../../shared/normalize.js";
import type { Database } from "./database.js";

/** Most distinct words a search uses (the rest of a long text adds little). */
export const MAX_QUERY_TOKENS = 64;

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

/** The numbers a query states, as strings: digit runs, and the values of its number words. */
export interface StatedNumbers {
  digits: string[];
  words: string[];
}

/** How much `searchLibrary` returns. */
export interface SearchLimits {
  /** The best templates returned as such. */
  lexical: number;
  /** The best templates whose problems are searched for the query's numbers. */
  wide: number;
  /** The most problems returned. */
  k: number;
}

/** A library problem as the router's lexical step reads it. */
export interface SearchedProblem {
  id: string;
  template: string;
  normalizedText: string;
  /** The current verified answer (newest verified, not superseded), or null. */
  answer: string | null;
}

/** What `searchLibrary` found. */
export interface LibrarySearch {
  /** The `lexical` best templates by BM25, best first. */
  templates: string[];
  /** Problems (of this normalization) of the `wide` best templates that may state the numbers, best template first. */
  problems: SearchedProblem[];
}

/**
 * One lexical search (BM25 over the FTS5 template index, by any of the words of `text`): the
 * `lexical` best templates, and up to `k` problems of the `wide` best templates, best template
 * first, that may state the query's `numbers`: every digit number of the query is one of the
 * problem's (sign aside), or, for a query with numbers in words only, every number of the problem
 * is one of those.
 */
export async function searchLibrary(
  db: Database,
  text: string,
  numbers: StatedNumbers,
  limits: SearchLimits,
): Promise<LibrarySearch> {
  const match = toFtsQuery(text);
  if (match === null) return { templates: [], problems: [] };
  const value = sql`ltrim(CAST(n.value AS TEXT), '-')`;
  const digits = [...new Set(numbers.digits)];
  const words = [...new Set(numbers.words)];
  const stating =
    digits.length > 0
      ? sql.join(
          digits.map((d) => sql`EXISTS (SELECT 1 FROM json_each(p.params) AS n WHERE ${value} = ${d})`),
          sql` AND `,
        )
      : sql`NOT EXISTS (SELECT 1 FROM json_each(p.params) AS n WHERE ${value} NOT IN (${sql.join(
          words.map((w) => sql`${w}`),
          sql`, `,
        )}))`;
  // One FTS scan for both lists. MATERIALIZED keeps it its own step (bm25() is not allowed in a
  // flattened query); CROSS JOIN keeps the join order (the hits, then their problems by the
  // template index: left to the planner, SQLite scanned every problem); rows with a null id are
  // the lexical templates. The answer is the current solution's (superseded versions never answer).
  const rows = await db.all<{
    id: string | null;
    template: string;
    normalizedText: string;
    answer: string | null;
  }>(sql`
    WITH hits AS MATERIALIZED (
      SELECT template, bm25(problems_fts) AS rank FROM problems_fts WHERE problems_fts MATCH ${match}
      ORDER BY rank LIMIT ${limits.wide}
    )
    SELECT * FROM (
      SELECT NULL AS id, template, NULL AS normalizedText, NULL AS answer FROM hits
      ORDER BY rank LIMIT ${limits.lexical}
    )
    UNION ALL
    SELECT * FROM (
      SELECT p.id AS id, p.template AS template, p.normalized_text AS normalizedText,
        (SELECT s.answer FROM solutions s
         WHERE s.problem_id = p.id AND s.verified = 1 AND s.superseded_at IS NULL
         ORDER BY s.id DESC LIMIT 1) AS answer
      FROM hits CROSS JOIN problems p ON p.template = hits.template AND p.normalize_version = ${NORMALIZE_VERSION}
      WHERE ${stating}
      ORDER BY hits.rank, p.id LIMIT ${limits.k}
    )`);
  return {
    templates: rows.filter((r) => r.id === null).map((r) => r.template),
    problems: rows.filter((r): r is SearchedProblem => r.id !== null),
  };
}

/** `value` as an integer within [min, max] (`min` when it is not a finite number). */
export function clamp(value: number, min: number, max: number): number {
  return Number.isFinite(value) ? Math.min(Math.max(Math.trunc(value), min), max) : min;
}
