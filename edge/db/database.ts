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
