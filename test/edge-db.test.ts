import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Database, migrateDatabase, type OpenDatabase, openDatabase } from "../edge/db/client.js";
import {
  claimNextFlywheel,
  enqueueFlywheel,
  finishFlywheel,
  getFlywheel,
  listFlywheel,
  requeueFlywheel,
} from "../edge/db/flywheel-queue.js";
import {
  addSolution,
  findByTemplate,
  findVerifiedByFingerprint,
  logQuery,
  registerBlock,
  registerProblem,
  setBlockState,
  supersedeSolutions,
} from "../edge/db/library.js";
import { getLibraryItem, listLibrary } from "../edge/db/library-pages.js";
import { searchLibrary, toFtsQuery } from "../edge/db/library-search.js";
import { listNodes, markNodeDown, markNodeUp, recordMissedHeartbeat, upsertNode } from "../edge/db/nodes.js";
import { addReplica, recordedHolders, removeNodeReplicas } from "../edge/db/replicas.js";
import { DomainError } from "../shared/errors.js";
import { normalizeProblem, problemFingerprint, problemTemplate } from "../shared/normalize.js";

let dir: string;
let opened: OpenDatabase[];
let db: Database;

async function open(name = "edge.db"): Promise<OpenDatabase> {
  const handle = await openDatabase({ url: `file:${join(dir, name)}` });
  opened.push(handle);
  return handle;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-edge-db-"));
  opened = [];
  db = (await open()).db;
  await migrateDatabase(db);
});

afterEach(() => {
  for (const handle of opened) handle.close();
  rmSync(dir, { recursive: true, force: true });
});

async function expectDomainError(promise: Promise<unknown>, status: number, code: string) {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DomainError);
  expect(err).toMatchObject({ status, code });
}

let counter = 0;
function problemInput(template: string, params: number[] = []) {
  counter++;
  return {
    normalizedText: `${template} #${counter}`,
    fingerprint: `fp-${counter}-${Math.random()}`,
    template,
    params,
  };
}

const manifest = {
  formatVersion: 1,
  tokenCount: 42,
  tokensSha256: "a".repeat(64),
  textSha256: "b".repeat(64),
  modelFingerprint: "model-1",
  engineFingerprint: { nodeLlamaCpp: "3.21.1", backend: "cuda", gpu: "H200" },
};

describe("migrations", () => {
  it("create every table and the FTS index, and re-running them changes nothing", async () => {
    const { client } = opened[0] as OpenDatabase;
    const names = async () =>
      (
        await client.execute(
          "SELECT name FROM sqlite_schema WHERE type IN ('table', 'trigger') ORDER BY name",
        )
      ).rows.map((r) => String(r.name));
    const before = await names();
    for (const table of [
      "api_keys",
      "blocks",
      "flywheel_queue",
      "gpu_nodes",
      "problems",
      "problems_fts",
      "queries",
      "solutions",
      "problems_fts_after_insert",
    ])
      expect(before).toContain(table);
    const applied = await client.execute("SELECT count(*) AS n FROM __drizzle_migrations");
    await migrateDatabase(db);
    const second = await open();
    await migrateDatabase(second.db);
    expect(await names()).toEqual(before);
    expect((await client.execute("SELECT count(*) AS n FROM __drizzle_migrations")).rows[0]?.n).toBe(
      applied.rows[0]?.n,
    );
    const fts = await client.execute(
      "SELECT bm25(problems_fts) AS r FROM problems_fts WHERE problems_fts MATCH 'x'",
    );
    expect(fts.rows).toEqual([]);
  });
});

describe("problems and solutions", () => {
  it("registers a fingerprint once and returns the same row after", async () => {
    const input = problemInput("what is # plus #", [2, 3]);
    const first = await registerProblem(db, input);
    const again = await registerProblem(db, { ...input, normalizedText: "something else" });
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.problem).toEqual(first.problem);
    expect(first.problem.params).toEqual([2, 3]);
    const { client } = opened[0] as OpenDatabase;
    await expect(
      client.execute({
        sql: "INSERT INTO problems (id, normalized_text, fingerprint, template, params, created_at) VALUES ('x', 't', ?, 't', '{}', 0)",
        args: [input.fingerprint],
      }),
    ).rejects.toThrow(/UNIQUE/);
  });

  it("serves the newest verified solution on the fast path, never an unverified one", async () => {
    const { problem } = await registerProblem(db, problemInput("sum of the first # primes", [10]));
    expect(await findVerifiedByFingerprint(db, problem.fingerprint)).toBeNull();
    const base = { problemId: problem.id, worked: "2+3+5+...", program: "print(129)", parametric: true };
    await addSolution(db, { ...base, answer: "130", verified: false, verification: { ok: false } });
    expect(await findVerifiedByFingerprint(db, problem.fingerprint)).toBeNull();
    await addSolution(db, {
      ...base,
      answer: "129",
      verified: true,
      verification: { ok: true, stdout: "129" },
    });
    const hit = await findVerifiedByFingerprint(db, problem.fingerprint);
    expect(hit?.answer).toBe("129");
    expect(hit?.problem.id).toBe(problem.id);
    expect(hit?.solution.verification).toEqual({ ok: true, stdout: "129" });
    expect(hit?.solution.parametric).toBe(true);
    await expectDomainError(
      addSolution(db, { ...base, problemId: "prb_missing", answer: "1", verified: true, verification: {} }),
      404,
      "problem_not_found",
    );
  });

  it("finds problems by template with their verified solution and ready blocks", async () => {
    const template = "area of a circle of radius #";
    const a = (await registerProblem(db, problemInput(template, [1]))).problem;
    const b = (await registerProblem(db, problemInput(template, [2]))).problem;
    await registerProblem(db, problemInput("something unrelated"));
    await addSolution(db, {
      problemId: a.id,
      worked: "pi r^2",
      program: "import math\nprint(math.pi)",
      answer: "3.14159",
      parametric: true,
      verified: true,
      verification: {},
    });
    await registerBlock(db, {
      sha256: "1".repeat(64),
      problemId: a.id,
      manifest,
      state: "ready",
      nodeId: "n1",
    });
    await registerBlock(db, {
      sha256: "2".repeat(64),
      problemId: a.id,
      manifest,
      state: "building",
      nodeId: "n1",
    });
    const matches = await findByTemplate(db, template);
    expect(matches.map((m) => m.problem.id)).toEqual([a.id, b.id]);
    expect(matches[0]?.solution?.answer).toBe("3.14159");
    expect(matches[0]?.blocks.map((x) => x.sha256)).toEqual(["1".repeat(64)]);
    expect(matches[1]?.solution).toBeNull();
    expect(await findByTemplate(db, "nothing like it")).toEqual([]);
  });
});

describe("block replicas", () => {
  it("removeNodeReplicas drops one node's records of the blocks it names, and counts them", async () => {
    const { problem } = await registerProblem(db, problemInput("replicas"));
    const [a, b] = ["d".repeat(64), "e".repeat(64)];
    for (const sha of [a, b]) {
      await registerBlock(db, { sha256: sha, problemId: problem.id, manifest, state: "ready", nodeId: "n1" });
      for (const node of ["n1", "n2"]) await addReplica(db, sha, node);
    }
    // 600 names (two slices of 500), one of them held, the rest unknown.
    const names = [a, ...Array.from({ length: 599 }, (_, i) => i.toString(16).padStart(64, "0"))];
    expect(await removeNodeReplicas(db, "n1", names)).toBe(1);
    const holders = await recordedHolders(db, [a, b]);
    expect([...(holders.get(a) ?? [])]).toEqual(["n2"]);
    expect([...(holders.get(b) ?? [])].sort()).toEqual(["n1", "n2"]);
    expect(await removeNodeReplicas(db, "n1", [a])).toBe(0);
  });
});

describe("blocks", () => {
  it("stores manifest fields as columns, re-registers idempotently and changes state", async () => {
    const { problem } = await registerProblem(db, problemInput("t"));
    const sha = "c".repeat(64);
    const block = await registerBlock(db, {
      sha256: sha,
      problemId: problem.id,
      manifest,
      state: "building",
      nodeId: null,
    });
    expect(block).toMatchObject({
      tokenCount: 42,
      modelFingerprint: "model-1",
      state: "building",
      nodeId: null,
    });
    // object fingerprints are stored with sorted keys, so equal objects compare equal as strings
    expect(block.engineFingerprint).toBe('{"backend":"cuda","gpu":"H200","nodeLlamaCpp":"3.21.1"}');
    expect(block.manifest).toEqual(manifest);
    const again = await registerBlock(db, {
      sha256: sha,
      problemId: problem.id,
      manifest,
      state: "ready",
      nodeId: "n2",
    });
    expect(again).toMatchObject({ state: "ready", nodeId: "n2", createdAt: block.createdAt });
    expect((await setBlockState(db, sha, "quarantined")).state).toBe("quarantined");
    await expectDomainError(setBlockState(db, "d".repeat(64), "ready"), 404, "block_not_found");
    const other = await registerProblem(db, problemInput("u"));
    await expectDomainError(
      registerBlock(db, { sha256: sha, problemId: other.problem.id, manifest, state: "ready", nodeId: null }),
      409,
      "block_problem_mismatch",
    );
  });
});

describe("lexical search", () => {
  const templates = [
    "find the sum of the first # prime numbers",
    "find the area of a circle with radius #",
    "how many ways can # people sit around a round table",
    "solve the quadratic equation # x squared plus # x plus # equals zero",
    "what is the remainder when # to the power # is divided by #",
  ];

  beforeEach(async () => {
    for (const t of templates) await registerProblem(db, problemInput(t));
    await registerProblem(db, problemInput(templates[1] as string)); // a second problem, same template
  });

  /** The `n` best templates by BM25 (the router's lexical list). */
  const templatesOf = async (q: string, n = 10) =>
    (await searchLibrary(db, q, { digits: [], words: [] }, { lexical: n, wide: n, k: 0 })).templates;

  it("ranks the matching template first", async () => {
    const cases: [string, string][] = [
      ["sum of the first # primes", templates[0] as string],
      ["a circle has radius #; what is its area", templates[1] as string],
      ["in how many ways can # people be seated at a round table", templates[2] as string],
      ["remainder of # to the power # divided by #", templates[4] as string],
    ];
    for (const [query, expected] of cases) expect((await templatesOf(query, 3))[0], query).toBe(expected);
  });

  it("returns each template once, honours the limits, and finds the problems stating the numbers", async () => {
    const circle = templates[1] as string;
    expect(
      (await templatesOf("find the area of a circle with radius")).filter((t) => t === circle).length,
    ).toBe(1);
    expect((await templatesOf("find the", 1)).length).toBe(1);
    const seven = (await registerProblem(db, problemInput(circle, [7]))).problem;
    await registerProblem(db, problemInput(circle, [8]));
    const limits = { lexical: 1, wide: 5, k: 5 };
    const found = await searchLibrary(db, "circle radius area", { digits: ["7"], words: [] }, limits);
    expect(found.templates).toEqual([circle]);
    expect(found.problems.map((p) => p.id)).toEqual([seven.id]);
    expect(found.problems[0]?.answer).toBeNull();
    const inWords = await searchLibrary(db, "circle radius area", { digits: [], words: ["7"] }, limits);
    expect(inWords.problems.map((p) => p.id)).toContain(seven.id);
  });

  it("reads a problem's current answer, never a superseded one", async () => {
    const circle = templates[1] as string;
    const { problem } = await registerProblem(db, problemInput(circle, [9]));
    const solution = (answer: string) =>
      addSolution(db, {
        problemId: problem.id,
        worked: "w",
        program: null,
        answer,
        parametric: false,
        verified: true,
        verification: {},
      });
    const first = await solution("81pi");
    await solution("82pi");
    await supersedeSolutions(db, { problemId: problem.id, by: first.id, at: new Date() });
    const found = await searchLibrary(
      db,
      "circle radius",
      { digits: ["9"], words: [] },
      { lexical: 1, wide: 5, k: 5 },
    );
    expect(found.problems.find((p) => p.id === problem.id)?.answer).toBe("81pi");
  });

  it("treats FTS syntax in the query as plain words", async () => {
    const hostile = [
      'circle" OR "x',
      "circle*",
      "NEAR(circle radius, 2)",
      "(circle AND) OR NOT",
      "radius: ^circle -area +",
      '"""',
      "{}[]()*^:",
      "NEAR",
      "",
      "   ",
    ];
    for (const q of hostile) expect(Array.isArray(await templatesOf(q, 5))).toBe(true);
    expect((await templatesOf("NEAR(circle radius, 2)", 1))[0]).toBe(templates[1]);
    expect(await templatesOf("{}[]()*^:", 5)).toEqual([]);
    expect(toFtsQuery('a "b" NEAR(c) d*')).toBe('"a" OR "b" OR "near" OR "c" OR "d"');
  });

  it("indexes each template once and follows deletes and template changes", async () => {
    const { client } = opened[0] as OpenDatabase;
    const count = async () => (await client.execute("SELECT count(*) AS n FROM problems_fts")).rows[0]?.n;
    expect(await count()).toBe(templates.length);
    const circle = await findByTemplate(db, templates[1] as string);
    await client.execute({ sql: "DELETE FROM problems WHERE id = ?", args: [circle[0]?.problem.id ?? ""] });
    expect(await templatesOf("circle radius")).toContain(templates[1]);
    await client.execute({ sql: "DELETE FROM problems WHERE id = ?", args: [circle[1]?.problem.id ?? ""] });
    expect(await templatesOf("circle radius")).not.toContain(templates[1]);
    await client.execute({
      sql: "UPDATE problems SET template = 'volume of a sphere of radius #' WHERE template = ?",
      args: [templates[2] as string],
    });
    expect(await templatesOf("people round table")).not.toContain(templates[2]);
    expect(await templatesOf("sphere volume")).toEqual(["volume of a sphere of radius #"]);
    expect(await count()).toBe(templates.length - 1);
  });
});

describe("templates from shared/normalize", () => {
  it("matches templates made by shared/normalize", async () => {
    for (const text of ["What is the sum of the first 12 primes?", "Compute $\\frac{3}{4}$ of 200."]) {
      const { template, params } = problemTemplate(text);
      await registerProblem(db, {
        normalizedText: normalizeProblem(text),
        fingerprint: await problemFingerprint(text),
        template,
        params,
      });
    }
    const query = problemTemplate("Sum of the first 30 primes, please").template;
    const found = await searchLibrary(db, query, { digits: [], words: [] }, { lexical: 1, wide: 1, k: 0 });
    expect(found.templates).toEqual(["What is the sum of the first # primes"]);
  });
});

describe("library listing and query log", () => {
  it("pages through the library with a cursor", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await registerProblem(db, problemInput(`p${i}`))).problem.id);
    const first = await addSolution(db, {
      problemId: ids[0] as string,
      worked: "w",
      program: null,
      answer: "1",
      parametric: false,
      verified: true,
      verification: {},
    });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await listLibrary(db, { limit: 2, cursor });
      seen.push(...page.items.map((i) => i.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null);
    expect(seen).toEqual(ids);
    expect(pages).toBe(3);
    const item = await getLibraryItem(db, ids[0] as string);
    expect(item?.solutions).toEqual([first]);
    expect(await getLibraryItem(db, "prb_nope")).toBeNull();
    await expectDomainError(listLibrary(db, { limit: 2, cursor: "' OR 1=1 --" }), 400, "cursor_invalid");
  });

  it("searches the library by words and numbers and lists summaries, not whole entries", async () => {
    const real = async (text: string) => {
      const normalizedText = normalizeProblem(text);
      const { template, literals } = problemTemplate(normalizedText);
      return (
        await registerProblem(db, {
          normalizedText,
          fingerprint: await problemFingerprint(text),
          template,
          params: literals,
        })
      ).problem;
    };
    const sheep = await real("A farmer has 41 sheep and buys 17 more. How many sheep?");
    const goats = await real("A farmer has 12 goats and sells 5. How many goats?");
    const jars = await real("A crate holds 17 rows of 23 jars. How many jars?");
    const old = await addSolution(db, {
      problemId: sheep.id,
      worked: "41 + 17",
      program: "a, b = PARAMS\nprint(a + b)",
      answer: "58",
      parametric: true,
      verified: true,
      verification: {},
    });
    const current = await addSolution(db, {
      ...old,
      problemId: sheep.id,
      answer: "58",
      worked: "41 plus 17",
    });
    expect(
      (await supersedeSolutions(db, { problemId: sheep.id, by: current.id, at: new Date() })).map(
        (x) => x.id,
      ),
    ).toEqual([old.id]);
    await registerBlock(db, {
      sha256: "1".repeat(64),
      problemId: sheep.id,
      manifest,
      state: "superseded",
      nodeId: "n1",
    });
    await registerBlock(db, {
      sha256: "2".repeat(64),
      problemId: sheep.id,
      manifest,
      state: "ready",
      nodeId: "n1",
    });
    const ids = async (q: string) => (await listLibrary(db, { limit: 10, q })).items.map((i) => i.id);
    expect(await ids("farmer")).toEqual([sheep.id, goats.id]);
    // Every word must be there; words are stemmed and case-insensitive.
    expect(await ids("FARMER buys")).toEqual([sheep.id]);
    expect(await ids("farmer buy")).toEqual([sheep.id]);
    expect(await ids("jar")).toEqual([jars.id]);
    // Numbers match the problem's own numbers.
    expect(await ids("17")).toEqual([sheep.id, jars.id]);
    expect(await ids("jars 17")).toEqual([jars.id]);
    expect(await ids("farmer 99")).toEqual([]);
    // FTS syntax is only ever words.
    expect(await ids('farmer" OR "jars')).toEqual([]);
    expect(await ids("* ( :")).toEqual([]);
    // Paging over a search.
    const first = await listLibrary(db, { limit: 1, q: "17" });
    expect(first.items.map((i) => i.id)).toEqual([sheep.id]);
    const next = await listLibrary(db, { limit: 1, q: "17", cursor: first.nextCursor });
    expect(next).toMatchObject({ items: [{ id: jars.id }], nextCursor: null });

    const [summary] = (await listLibrary(db, { limit: 1 })).items;
    expect(summary).toEqual({
      id: sheep.id,
      problem: sheep.normalizedText,
      template: sheep.template,
      answer: "58",
      solution: { id: current.id, version: 2, parametric: true },
      block: { sha256: "2".repeat(64), tokenCount: manifest.tokenCount, state: "ready" },
      createdAt: sheep.createdAt,
    });
    const detail = await getLibraryItem(db, sheep.id);
    expect(detail?.solutions.map((x) => [x.version, x.supersededBy])).toEqual([
      [1, current.id],
      [2, null],
    ]);
    expect(detail?.blocks.map((b) => [b.state, b.manifest.tokensSha256])).toEqual([
      ["superseded", manifest.tokensSha256],
      ["ready", manifest.tokensSha256],
    ]);
  });

  it("logs queries", async () => {
    const id = await logQuery(db, {
      keyId: null,
      fingerprint: "fp",
      route: { kind: "abstain" },
      source: "model",
      cost: { tokens: 12 },
      confidence: 0.4,
      verified: false,
    });
    const { client } = opened[0] as OpenDatabase;
    const row = (await client.execute({ sql: "SELECT * FROM queries WHERE id = ?", args: [id] })).rows[0];
    expect(row).toMatchObject({ fingerprint: "fp", source: "model", confidence: 0.4, verified: 0 });
    expect(JSON.parse(String(row?.route))).toEqual({ kind: "abstain" });
  });
});

describe("flywheel queue", () => {
  it("keeps one open item per fingerprint and closes items once", async () => {
    const a = await enqueueFlywheel(db, { problem: "p", fingerprint: "f1", referenceAnswer: "7" });
    const dup = await enqueueFlywheel(db, { problem: "p", fingerprint: "f1" });
    expect(a.created).toBe(true);
    expect(dup).toEqual({ item: a.item, created: false });
    const claimed = await claimNextFlywheel(db);
    expect(claimed).toMatchObject({ id: a.item.id, status: "running", attempts: 1, referenceAnswer: "7" });
    expect((await enqueueFlywheel(db, { problem: "p", fingerprint: "f1" })).created).toBe(false);
    expect(await claimNextFlywheel(db)).toBeNull();
    const done = await finishFlywheel(db, a.item.id, {
      status: "rejected",
      cost: { tokens: 5 },
      result: { why: "disagree" },
    });
    expect(done).toMatchObject({ status: "rejected", cost: { tokens: 5 }, result: { why: "disagree" } });
    await expectDomainError(
      finishFlywheel(db, a.item.id, { status: "accepted" }),
      409,
      "flywheel_item_not_running",
    );
    await expectDomainError(
      finishFlywheel(db, "fly_missing", { status: "accepted" }),
      404,
      "flywheel_item_not_found",
    );
    // once closed, the same problem may be queued again
    expect((await enqueueFlywheel(db, { problem: "p", fingerprint: "f1" })).created).toBe(true);
    expect((await listFlywheel(db)).length).toBe(2);
    expect((await listFlywheel(db, { status: "rejected" })).map((i) => i.id)).toEqual([a.item.id]);
  });

  it("claims in FIFO order and reclaims a silent worker's item only when asked", async () => {
    const first = await enqueueFlywheel(db, { problem: "p1", fingerprint: "g1" });
    await enqueueFlywheel(db, { problem: "p2", fingerprint: "g2" });
    const t0 = new Date(1_000_000);
    expect((await claimNextFlywheel(db, { now: t0 }))?.id).toBe(first.item.id);
    const later = new Date(t0.getTime() + 60_000);
    expect((await claimNextFlywheel(db, { now: later }))?.fingerprint).toBe("g2");
    expect(await claimNextFlywheel(db, { now: later, reclaimAfterMs: 120_000 })).toBeNull();
    const reclaimed = await claimNextFlywheel(db, { now: later, reclaimAfterMs: 30_000 });
    expect(reclaimed).toMatchObject({ id: first.item.id, attempts: 2 });
  });

  it("requeues a claimed item, giving its attempt back when asked", async () => {
    const { item } = await enqueueFlywheel(db, { problem: "p3", fingerprint: "h1" });
    expect(await claimNextFlywheel(db)).toMatchObject({ id: item.id, attempts: 1 });
    await requeueFlywheel(db, item.id, new Date(2_000_000));
    expect(await claimNextFlywheel(db)).toMatchObject({ id: item.id, attempts: 2 });
    await requeueFlywheel(db, item.id, new Date(2_000_000), { refundAttempt: true });
    expect(await getFlywheel(db, item.id)).toMatchObject({ status: "queued", attempts: 1 });
    expect(await claimNextFlywheel(db)).toMatchObject({ id: item.id, attempts: 2 });
  });

  it("gives each item to exactly one of many concurrent claimers", async () => {
    const n = 30;
    for (let i = 0; i < n; i++) await enqueueFlywheel(db, { problem: `p${i}`, fingerprint: `c${i}` });
    const handles = [db, (await open()).db, (await open()).db, (await open()).db];
    const claims = await Promise.all(
      Array.from({ length: n * 2 }, (_, i) => claimNextFlywheel(handles[i % handles.length] as Database)),
    );
    const ids = claims.filter((c) => c !== null).map((c) => c.id);
    expect(ids.length).toBe(n);
    expect(new Set(ids).size).toBe(n);
    expect(claims.filter((c) => c === null).length).toBe(n);
    expect((await listFlywheel(db, { status: "running" })).every((i) => i.attempts === 1)).toBe(true);
  });
});

describe("node registry", () => {
  const node = {
    id: "node-a",
    url: "http://127.0.0.1:8788",
    modelFingerprint: "model-1",
    engineFingerprint: { gpu: "H200", backend: "cuda" },
    capacity: { slots: 4 },
    health: { ok: true },
  };

  it("upserts, counts missed heartbeats and marks nodes down and up", async () => {
    const t = new Date(5_000);
    const created = await upsertNode(db, node, t);
    expect(created).toMatchObject({ status: "up", missedHeartbeats: 0, lastHeartbeatAt: t });
    expect(created.engineFingerprint).toBe('{"backend":"cuda","gpu":"H200"}');
    expect((await recordMissedHeartbeat(db, node.id, 2)).status).toBe("up");
    expect(await recordMissedHeartbeat(db, node.id, 2)).toMatchObject({
      status: "down",
      missedHeartbeats: 2,
    });
    expect(await listNodes(db, { status: "up" })).toEqual([]);
    expect(await markNodeUp(db, node.id)).toMatchObject({ status: "up", missedHeartbeats: 0 });
    expect((await markNodeDown(db, node.id)).status).toBe("down");
    const beat = await upsertNode(db, { ...node, url: "http://127.0.0.1:9999" }, new Date(9_000));
    expect(beat).toMatchObject({ status: "up", url: "http://127.0.0.1:9999", createdAt: created.createdAt });
    expect((await listNodes(db)).length).toBe(1);
    await expectDomainError(markNodeDown(db, "ghost"), 404, "node_not_found");
  });
});
