/** drizzle-kit, run without LIBSQL_URL, works on the database the app opens by default. */
import { afterEach, expect, it, vi } from "vitest";
import { DEFAULT_DB_URL } from "../edge/runtime/node.js";

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

it("drizzle.config.ts defaults to the app's default database", async () => {
  vi.stubEnv("LIBSQL_URL", undefined);
  const config = (await import("../drizzle.config.js")).default as { dbCredentials: { url: string } };
  expect(config.dbCredentials.url).toBe(DEFAULT_DB_URL);
});
