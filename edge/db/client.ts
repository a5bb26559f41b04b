/**
 * Opening the library database from Node (`@libsql/client`, a `file:` database or a libSQL server)
 * and applying migrations. The Workers entry builds the same `Database` with database.ts instead.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Client, createClient } from "@libsql/client";
import { drizzle } from "drizzle-orm/libsql";
import { migrate } from "drizzle-orm/libsql/migrator";
import type { Database } from "./database.js";
import * as schema from "./schema.js";

export type { Database } from "./database.js";

/** Where the database lives: `file:path.db`, `libsql://...` or `http(s)://...`. */
export interface DatabaseOptions {
  url: string;
  authToken?: string;
}

/** An open database: the drizzle handle, the raw client, and a way to close it. */
export interface OpenDatabase {
  db: Database;
  client: Client;
  close(): void;
}

/** How long a local connection waits for another connection's write lock before failing. */
const BUSY_TIMEOUT_MS = 5_000;

/** Opens the database for the Node entry; local files get WAL so readers never block the writer. */
export async function openDatabase(options: DatabaseOptions): Promise<OpenDatabase> {
  const client = createClient({
    url: options.url,
    ...(options.authToken ? { authToken: options.authToken } : {}),
    timeout: BUSY_TIMEOUT_MS,
  });
  try {
    if (options.url.startsWith("file:")) await client.execute("PRAGMA journal_mode = WAL");
  } catch (err) {
    client.close();
    throw err;
  }
  return { db: drizzle(client, { schema }), client, close: () => client.close() };
}

/**
 * The migrations folder, found by walking up from this module to the package root, so the same
 * lookup works from the TypeScript sources and from the compiled `dist/` tree.
 */
export function migrationsFolder(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "migrations");
    if (existsSync(join(candidate, "meta", "_journal.json"))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error("migrations/meta/_journal.json not found above edge/db");
    dir = parent;
  }
}

/** Applies every pending migration; already-applied ones are skipped, so this is safe at each start. */
export async function migrateDatabase(db: Database): Promise<void> {
  await migrate(db, { migrationsFolder: migrationsFolder() });
}
