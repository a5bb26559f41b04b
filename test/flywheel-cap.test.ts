/**
 * The per-key flywheel cap (issue 23: one public key queued 144 items): a key's unsure answers
 * queue work only while it has fewer than FLYWHEEL_OPEN_PER_KEY open items, another key is not
 * affected, and finished items free the key's share. Real libSQL file database, migrated.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Database, migrateDatabase, type OpenDatabase, openDatabase } from "../edge/db/client.js";
import {
  claimNextFlywheel,
  enqueueForKey,
  FLYWHEEL_OPEN_PER_KEY,
  finishFlywheel,
  listFlywheel,
} from "../edge/db/flywheel-queue.js";
import { logQuery } from "../edge/db/library.js";
import { sha256Hex } from "../shared/hash.js";

let dir: string;
let handle: OpenDatabase;
let db: Database;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-flywheel-cap-"));
  handle = await openDatabase({ url: `file:${join(dir, "edge.db")}` });
  db = handle.db;
  await migrateDatabase(db);
});

afterEach(() => {
  handle.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What /v1/solve does for an unsure answer: log the query, then queue the problem for its key. */
async function unsureSolve(keyId: string, problem: string): Promise<boolean> {
  const fingerprint = await sha256Hex(problem);
  await logQuery(db, {
    keyId,
    fingerprint,
    route: {},
    source: "model",
    cost: {},
    confidence: 0.1,
    verified: false,
  });
  return enqueueForKey(db, { keyId, problem, fingerprint });
}

describe("per-key flywheel cap", () => {
  it(`queues at most ${FLYWHEEL_OPEN_PER_KEY} open items per key; other keys and finished items are unaffected`, async () => {
    const queued: boolean[] = [];
    for (let i = 0; i < FLYWHEEL_OPEN_PER_KEY + 10; i++)
      queued.push(await unsureSolve("key-a", `flood problem ${i}`));
    expect(queued.filter(Boolean)).toHaveLength(FLYWHEEL_OPEN_PER_KEY);
    expect(queued.slice(FLYWHEEL_OPEN_PER_KEY)).toEqual(Array(10).fill(false));
    expect(await listFlywheel(db, { status: "queued" })).toHaveLength(FLYWHEEL_OPEN_PER_KEY);
    // Another key still queues its own work.
    expect(await unsureSolve("key-b", "an honest question")).toBe(true);
    // Asking again about an open problem queues nothing new and is not refused work.
    expect(await unsureSolve("key-a", "flood problem 0")).toBe(false);
    // A finished item frees one place for the key.
    const claimed = await claimNextFlywheel(db);
    if (!claimed) throw new Error("nothing to claim");
    await finishFlywheel(db, claimed.id, { status: "rejected" });
    const next = await unsureSolve(claimed.problem === "an honest question" ? "key-b" : "key-a", "one more");
    expect(next).toBe(true);
    expect(await unsureSolve("key-a", "and another")).toBe(false);
  });
});
