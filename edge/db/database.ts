/**
 * The drizzle database type every edge service takes, and its construction from a libSQL client.
 * Runtime-neutral: the Workers entry builds it from `@libsql/client/web`; nothing here touches
 * `node:*` (the Node entry opens files and migrates through client.ts).
 */
import type { Client } from "@libsql/client/web";
import { sql } from "drizzle-orm";
import type { LibSQLDatabase } from "drizzle-orm/libsql/driver-core";
import { drizzle } from "drizzle-orm/libsql/web";
import * as schema from "./schema.js";
import { apiKeys } from "./schema.js";

/** The library database, whatever transport the libSQL client uses. */
export type Database = LibSQLDatabase<typeof schema>;

/** Wraps an already-created libSQL client (HTTP/WebSocket in Workers) in the schema. */
export function databaseFromClient(client: Client): Database {
  return drizzle(client, { schema });
}

/** A round trip to the database (`select 1`), for health checks. */
export async function pingDatabase(db: Database): Promise<void> {
  await db.run(sql`select 1`);
}

/**
 * Whether the database takes a write now, for health checks: `page_limit` when it holds its
 * connection's `max_page_count` with no free page (the next page a write needs is refused with
 * SQLITE_FULL); else a committed write that changes nothing must succeed: one API key's label set
 * to itself (the admin key always exists; `PRAGMA user_version` would do on a file, but Turso
 * Cloud refuses to set it). A full disk, read-only files or a read-only connection make it throw
 * the driver's error. A server that does not answer the page counts (not SQLite's own pragmas)
 * skips that check.
 */
export async function probeWrite(db: Database): Promise<"ok" | "page_limit"> {
  const pages = await db
    .all<{ pages: number; maxPages: number; free: number }>(sql`
      select (select page_count from pragma_page_count()) as pages,
        (select max_page_count from pragma_max_page_count()) as maxPages,
        (select freelist_count from pragma_freelist_count()) as free`)
    .then(
      ([row]) => row ?? null,
      () => null,
    );
  if (pages && Number(pages.pages) >= Number(pages.maxPages) && Number(pages.free) === 0) return "page_limit";
  await db.run(
    sql`update ${apiKeys} set label = label where id = (select id from ${apiKeys} order by id limit 1)`,
  );
  return "ok";
}
