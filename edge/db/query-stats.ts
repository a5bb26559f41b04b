/** What the query log says about one library problem: how often queries were routed to it, by source. */
import { eq, sql } from "drizzle-orm";
import type { Database } from "./database.js";
import { queries } from "./schema.js";

/** Queries routed to the problem, counted by how they were answered (library, transfer, graft, ...). */
export async function problemHits(db: Database, problemId: string): Promise<Record<string, number>> {
  const rows = await db
    .select({ source: queries.source, count: sql<number>`count(*)` })
    .from(queries)
    .where(eq(sql`json_extract(${queries.route}, '$.problemId')`, problemId))
    .groupBy(queries.source);
  return Object.fromEntries(rows.map((r) => [r.source, Number(r.count)]));
}
