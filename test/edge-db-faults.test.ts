/**
 * The edge on a database that refuses writes (issue 35, item 3), through real HTTP on loopback: a
 * real edge on a libSQL file, a loopback GPU node with the real sandbox. The conditions, each
 * made for real: full (every connection's `max_page_count` held at the file's page count and the
 * tables' last pages filled: a true SQLITE_FULL; and, as the red team did, the database on a 3 MiB
 * tmpfs filled to ENOSPC, root only, skipped with the reason otherwise), read-only connections (`PRAGMA query_only`: a
 * true SQLITE_READONLY), and read-only files (`chattr +i` as root, which ignores modes; `chmod`
 * otherwise): the edge running on them sees SQLITE_IOERR_WRITE, one started on them
 * SQLITE_READONLY. In each: a library answer is still answered (its log line dropped and counted),
 * a write answers 503 with the condition's own code, /health says the database is not writable,
 * and a deposit whose registration fails leaves no block on the GPU node.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, closeSync, existsSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@libsql/client";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertApiKey } from "../edge/db/api-keys.js";
import { logQuery, registerProblem } from "../edge/db/library.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { renderBlockText } from "../edge/services/block-text.js";
import { silentLogger } from "../shared/http/logger.js";
import { type LoopbackGpu, manifestFor, startLoopbackGpu } from "./helpers/loopback-gpu.js";

const SECRET = "test-secret-0123456789abcdef";
// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

const KNOWN = {
  problem: "What is 6 times 7?",
  solution: "Six sevens are forty-two.",
  program: "print(int(PARAMS[0]) * int(PARAMS[1]))",
  answer: "42",
};
const NEW = {
  problem: "What is 5 times 9?",
  solution: "Five nines are forty-five.",
  program: "print(int(PARAMS[0]) * int(PARAMS[1]))",
  answer: "45",
};

let gpu: LoopbackGpu;
const dirs: string[] = [];
const edges: EdgeServer[] = [];
const immutable: string[] = [];
const mounts: string[] = [];

beforeAll(async () => {
  gpu = await startLoopbackGpu();
});
afterAll(async () => {
  for (const e of edges) await e.close();
  await gpu.close();
  if (immutable.length) execFileSync("chattr", ["-i", ...immutable]);
  // Lazily: a database file still open (8406ef2's edge kept one) must not fail the suite.
  for (const m of mounts) execFileSync("umount", ["-l", m]);
  for (const d of dirs) {
    chmodSync(d, 0o700);
    rmSync(d, { recursive: true, force: true });
  }
});

async function edge(dbPath: string, adminKey?: string): Promise<EdgeServer & { adminKey: string }> {
  const e = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${dbPath}`,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_GPU_URL: gpu.url,
      ...(adminKey ? { KVGRAFT_ADMIN_KEY: adminKey } : {}),
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  edges.push(e);
  const key = adminKey ?? e.generatedAdminKey;
  if (!key) throw new Error("expected a generated admin key on a fresh database");
  return Object.assign(e, { adminKey: key });
}

async function call(e: { url: string; adminKey: string }, method: string, path: string, body?: unknown) {
  const res = await fetch(`${e.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${e.adminKey}`, "content-type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as Json };
}

/**
 * A fresh edge with KNOWN deposited (through the sandbox), answering from the library; its
 * database in `dir` (a new temporary folder by default).
 */
async function depositedEdge(dir = mkdtempSync(join(tmpdir(), "kvgraft-db-faults-"))) {
  dirs.push(dir);
  const e = await edge(join(dir, "edge.db"));
  const deposit = await call(e, "POST", "/admin/solutions", KNOWN);
  expect(deposit.status).toBe(201);
  const health = await call(e, "GET", "/health");
  expect(health.body.db).toMatchObject({ status: "ok", writable: true, droppedLogLines: 0 });
  // The pool's background work (heartbeat sweeps, rebalancing) writes too: stopped and awaited,
  // so that no write of its own frees or takes a page while a condition is set up and checked.
  await e.gpu.close();
  return { e, dir };
}

/**
 * Runs a per-connection pragma on every connection of the edge's libSQL client. The client keeps
 * a pool (at most `concurrency`, 20 by default) and each call borrows one before its first await,
 * so 20 calls issued together hold 20 distinct connections: every one the pool can ever have.
 */
async function onEveryConnection(e: EdgeServer, statement: string): Promise<void> {
  // The drizzle handle's own client; Database's type leaves it out.
  const client = (e.db as unknown as { $client: Client }).$client;
  await Promise.all(Array.from({ length: 20 }, () => client.execute(statement)));
}

/** Whether the loopback node holds the block of `request`'s text. */
async function nodeHolds(request: typeof NEW): Promise<boolean> {
  const { sha256 } = await manifestFor(renderBlockText(request));
  const res = await fetch(`${gpu.url}/v1/blocks/${sha256}`);
  await res.arrayBuffer();
  return res.status === 200;
}

/**
 * What every condition must give: library answers (log line dropped and counted), the
 * condition's 503 on writes, no block left on the node by a failed deposit, and a /health that
 * says the database is not writable (`healthCodes`: what it may name).
 */
async function expectCondition(e: EdgeServer & { adminKey: string }, code: string, healthCodes = [code]) {
  const answered = await call(e, "POST", "/v1/solve", { problem: KNOWN.problem });
  expect(answered.status).toBe(200);
  expect(answered.body).toMatchObject({ answer: "42", source: "library", verified: true, queryId: null });

  const key = await call(e, "POST", "/admin/keys", { role: "public", label: "new" });
  expect(key.status).toBe(503);
  expect(key.body.error.code).toBe(code);
  expect(key.retryAfter).toBe("60");

  const deposit = await call(e, "POST", "/admin/solutions", NEW);
  expect(deposit.status).toBe(503);
  expect(deposit.body.error.code).toBe(code);
  expect(await nodeHolds(NEW)).toBe(false);

  const health = await call(e, "GET", "/health");
  expect(health.status).toBe(200);
  expect(health.body.status).toBe("degraded");
  expect(health.body.db).toMatchObject({ status: "ok", writable: false, droppedLogLines: 1 });
  expect(healthCodes).toContain(health.body.db.writeError);

  const metrics = await fetch(`${e.url}/admin/nodes/metrics`, {
    headers: { authorization: `Bearer ${e.adminKey}` },
  });
  expect(await metrics.text()).toContain("kvgraft_edge_query_log_dropped_total 1\n");
}

/**
 * Fills the pages of the tables the requests write, each with its own write function, until each
 * refuses a row with SQLITE_FULL: the next row of each needs a page that cannot be had.
 */
async function fillTables(e: EdgeServer): Promise<void> {
  const fills: ((i: number) => Promise<unknown>)[] = [
    (i) =>
      logQuery(e.db, {
        keyId: null,
        fingerprint: `f${i}`,
        route: {},
        source: "fill",
        cost: {},
        confidence: null,
        verified: false,
      }),
    (i) => insertApiKey(e.db, { prefix: `p${i}`, hash: "h", role: "public", label: "l" }),
    (i) =>
      registerProblem(e.db, { normalizedText: `t${i}`, fingerprint: `f${i}`, template: "t", params: [] }),
  ];
  for (const fill of fills)
    for (let i = 0; ; i++) {
      const refused = await fill(i).then(
        () => null,
        (err: unknown) => err,
      );
      if (refused) {
        expect(String((refused as { cause?: unknown }).cause ?? refused)).toMatch(/SQLITE_FULL/);
        break;
      }
    }
}

describe("a database that refuses writes", () => {
  it("full (SQLITE_FULL): 503 database_full, library answers still answered", async () => {
    const { e } = await depositedEdge();
    const [{ pages }] = (await e.db.all(sql`select page_count as pages from pragma_page_count()`)) as [
      { pages: number },
    ];
    await onEveryConnection(e, `PRAGMA max_page_count = ${pages}`);
    await fillTables(e);
    // The page limit alone is seen (no page free), before any request's write was refused.
    expect((await call(e, "GET", "/health")).body.db).toMatchObject({
      writable: false,
      writeError: "database_full",
    });
    await expectCondition(e, "database_full");
  });

  it("a full file system (the red team's 3 MiB tmpfs, filled to ENOSPC): 503 database_full", async (ctx) => {
    const dir = mkdtempSync(join(tmpdir(), "kvgraft-db-tmpfs-"));
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", dir], { stdio: "pipe" });
      mounts.push(dir);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      return ctx.skip("mount -t tmpfs is not permitted here (needs root / CAP_SYS_ADMIN)");
    }
    const { e } = await depositedEdge(dir);
    const fd = openSync(join(dir, "filler"), "w");
    try {
      for (;;) writeSync(fd, Buffer.alloc(4096));
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
    } finally {
      closeSync(fd);
    }
    // Pages SQLite already holds (free pages, the write-ahead log's file) take rows for a while.
    await fillTables(e);
    await expectCondition(e, "database_full");
  });

  it("a read-only connection (SQLITE_READONLY): 503 database_read_only", async () => {
    const { e } = await depositedEdge();
    await onEveryConnection(e, "PRAGMA query_only = 1");
    // The probe write alone finds it, before any request's write was refused.
    const health = await call(e, "GET", "/health");
    expect(health.body.db).toMatchObject({ writable: false, writeError: "database_read_only" });
    expect(health.body.db.refusedAgoS).toBeUndefined();
    await expectCondition(e, "database_read_only");
  });

  it("read-only files, under a running edge and for one started on them", async (ctx) => {
    const { e, dir } = await depositedEdge();
    // The database and its write-ahead log; not the -shm index, which SQLite maps into memory: a
    // write to the mapping of an immutable file is a SIGBUS that kills the process (seen here).
    const files = ["edge.db", "edge.db-wal"].map((f) => join(dir, f)).filter((f) => existsSync(f));
    if (process.getuid?.() === 0) {
      try {
        execFileSync("chattr", ["+i", ...files], { stdio: "ignore" });
        immutable.push(...files);
      } catch {
        ctx.skip(
          "chattr +i is not permitted here (root ignores file modes, so nothing else makes them read-only)",
        );
      }
    } else {
      for (const f of files) chmodSync(f, 0o444);
      chmodSync(dir, 0o555);
    }
    // The running edge's open connection: its writes fail as SQLITE_IOERR_WRITE; the probe of
    // /health, after those, as SQLITE_READONLY.
    await expectCondition(e, "database_io_error", ["database_io_error", "database_read_only"]);
    await e.close();
    const reopened = await edge(join(dir, "edge.db"), e.adminKey);
    await expectCondition(reopened, "database_read_only");
  });
});
