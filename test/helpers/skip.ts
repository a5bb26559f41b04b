/**
 * Skips with a reason: every skipped test carries a note that says why it skipped and what would
 * run it (vitest's verbose reporter prints it by the test), and the reason is printed once on
 * stderr, so the default reporter's summary line is not the only trace of a skip.
 */
import { beforeEach } from "vitest";

/**
 * Skips each test of the enclosing suite (or file, at top level) where `reason` is not null. The
 * suite's beforeAll and afterAll hooks still run: they return early on the same reason.
 */
export function skipEachWith(reason: string | null, suite: string): void {
  if (reason !== null) console.warn(`${suite}: skipped: ${reason}`);
  beforeEach((ctx) => ctx.skip(reason !== null, reason ?? undefined));
}
