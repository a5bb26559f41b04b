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
 * SQLITE_FULL), else a committed write that changes nothing (its header's `user_version`
 * rewritten with the value it has, one page) must succeed: a full disk, read-only files or a
 * read-only connection make it throw the driver's error.
 */
export async function probeWrite(db: Database): Promise<"ok" | "page_limit"> {
  const [row] = await db.all<{ pages: number; maxPages: number; free: number; version: number }>(sql`
    select (select page_count from pragma_page_count()) as pages,
      (select max_page_count from pragma_max_page_count()) as maxPages,
      (select freelist_count from pragma_freelist_count()) as free,
      (select user_version from pragma_user_version()) as version`);
  if (!row) throw new Error("the database answered no row to its page counts");
  if (Number(row.pages) >= Number(row.maxPages) && Number(row.free) === 0) return "page_limit";
  const version = Number(row.version);
  if (!Number.isSafeInteger(version)) throw new Error(`user_version ${row.version} is not an integer`);
  await db.run(sql.raw(`PRAGMA user_version = ${version}`));
  return "ok";
}
