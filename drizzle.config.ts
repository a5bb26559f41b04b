/**
 * drizzle-kit configuration.
 *
 * Schema changes: `npx drizzle-kit generate` writes SQL into migrations/ (never `drizzle-kit push`:
 * it does not know the FTS5 table from the custom migration and would drop it).
 * Deploy step (Turso / any libSQL server):
 *   LIBSQL_URL=libsql://<db>.turso.io LIBSQL_AUTH_TOKEN=<token> npx drizzle-kit migrate
 * The Node entry and the tests apply the same folder themselves (edge/db/client.ts).
 * This tool config runs outside the app, so it reads the environment directly; without LIBSQL_URL
 * it uses the app's own default database (DEFAULT_DB_URL in edge/runtime/node.ts, which `kvgraft start`
 * and `kvgraft serve edge` open), so `npx drizzle-kit studio` shows what the app wrote.
 */
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "turso",
  schema: "./edge/db/schema.ts",
  out: "./migrations",
  dbCredentials: {
    url: process.env.LIBSQL_URL ?? "file:.data/kvgraft.db",
    ...(process.env.LIBSQL_AUTH_TOKEN ? { authToken: process.env.LIBSQL_AUTH_TOKEN } : {}),
  },
});
