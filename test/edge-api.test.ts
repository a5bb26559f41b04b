/**
 * The edge's HTTP API through real HTTP on loopback: a real edge (Node entry, libSQL file
 * database), and, where the GPU node matters, a plain loopback HTTP server started here that
 * counts what reaches it and answers as told (down, hanging, garbage).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { addSolution, registerProblem } from "../edge/db/library.js";
import { queries } from "../edge/db/schema.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { verifyUploadGrant } from "../edge/services/upload-grant.js";
import { silentLogger } from "../shared/http/logger.js";
import { normalizeProblem, problemFingerprint, problemTemplate } from "../shared/normalize.js";

const SECRET = "test-secret-0123456789abcdef";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

interface Loopback {
  url: string;
  requests: { method: string; path: string; headers: IncomingMessage["headers"] }[];
  close(): Promise<void>;
}

/** A loopback HTTP server that records every request and answers with `respond`. */
async function loopback(
  respond: (req: IncomingMessage) => { status: number; body: string; delayMs?: number } | "hang",
): Promise<Loopback> {
  const requests: Loopback["requests"] = [];
  const server: Server = createServer((req, res) => {
    requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers });
    req.resume();
    req.on("end", () => {
      const r = respond(req);
      if (r === "hang") return;
      setTimeout(
        () => res.writeHead(r.status, { "content-type": "application/json" }).end(r.body),
        r.delayMs ?? 0,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const dirs: string[] = [];
const edges: EdgeServer[] = [];
const servers: Loopback[] = [];

async function edge(env: Record<string, string> = {}): Promise<EdgeServer & { adminKey: string }> {
  const dir = mkdtempSync(join(tmpdir(), "kvgraft-edge-api-"));
  dirs.push(dir);
  const e = await startEdgeServer({
    env: { LIBSQL_URL: `file:${join(dir, "edge.db")}`, KVGRAFT_GPU_SECRET: SECRET, ...env },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  edges.push(e);
  if (!e.generatedAdminKey) throw new Error("expected a generated admin key on a fresh database");
  return Object.assign(e, { adminKey: e.generatedAdminKey });
}

async function gpuServer(respond: Parameters<typeof loopback>[0]): Promise<Loopback> {
  const s = await loopback(respond);
  servers.push(s);
  return s;
}

afterAll(async () => {
  for (const e of edges) await e.close();
  for (const s of servers) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function call(
  e: { url: string },
  method: string,
  path: string,
  opts: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) headers["content-type"] ??= "application/json";
  return fetch(`${e.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
}

async function json(res: Response): Promise<Json> {
  return (await res.json()) as Json;
}

/** Puts a verified solution straight into the library (the data layer, no GPU). */
async function seedVerified(e: EdgeServer, problem: string, answer: string) {
  const normalizedText = normalizeProblem(problem);
  const { template, params } = problemTemplate(problem);
  const { problem: row } = await registerProblem(e.db, {
    normalizedText,
    fingerprint: await problemFingerprint(problem),
    template,
    params,
  });
  await addSolution(e.db, {
    problemId: row.id,
    worked: "worked",
    program: "print(42)",
    answer,
    parametric: false,
    verified: true,
    verification: { method: "test" },
  });
  return row;
}

describe("authentication and authorization", () => {
  let e: Awaited<ReturnType<typeof edge>>;
  let publicKey: string;
  let revokedKey: string;

  beforeAll(async () => {
    e = await edge();
    publicKey = (
      await json(
        await call(e, "POST", "/admin/keys", { key: e.adminKey, body: { role: "public", label: "p" } }),
      )
    ).key;
    const revoked = await json(
      await call(e, "POST", "/admin/keys", { key: e.adminKey, body: { role: "public", label: "r" } }),
    );
    revokedKey = revoked.key;
    const del = await call(e, "DELETE", `/admin/keys/${revoked.id}`, { key: e.adminKey });
    expect(del.status).toBe(200);
    expect((await json(del)).key.revokedAt).not.toBeNull();
  });

  const cases: [string, Record<string, string>, string][] = [
    ["missing", {}, "auth_missing"],
    ["empty bearer", { authorization: "Bearer " }, "auth_malformed"],
    ["basic scheme", { authorization: "Basic dXNlcjpwYXNz" }, "auth_malformed"],
    ["not a key", { authorization: "Bearer hello" }, "auth_malformed"],
    ["unknown key", { authorization: `Bearer kvg_AAAAAAAA_${"B".repeat(32)}` }, "auth_invalid"],
  ];
  for (const [name, headers, code] of cases) {
    it(`401 ${code} for a ${name} credential, with a uniform body`, async () => {
      for (const [method, path] of [
        ["POST", "/v1/solve"],
        ["GET", "/v1/library"],
        ["POST", "/admin/solutions"],
        ["GET", "/admin/keys"],
      ] as const) {
        const res = await call(e, method, path, {
          headers,
          body: method === "POST" ? { problem: "1+1" } : undefined,
        });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
        const body = await json(res);
        expect(body.error).toEqual({ code, message: "Missing or invalid API key." });
        expect(body.requestId).toBe(res.headers.get("x-request-id"));
      }
    });
  }

  it("401 auth_revoked for a revoked key, and the same message", async () => {
    const res = await call(e, "GET", "/v1/library", { key: revokedKey });
    expect(res.status).toBe(401);
    expect((await json(res)).error).toEqual({ code: "auth_revoked", message: "Missing or invalid API key." });
  });

  it("a public key reads /v1 but gets 403 on every admin method and path", async () => {
    expect((await call(e, "GET", "/v1/library", { key: publicKey })).status).toBe(200);
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) {
      for (const path of [
        "/admin/keys",
        "/admin/solutions",
        "/admin/nodes",
        "/admin/blocks/abc",
        "/admin/nope",
        "/admin",
      ]) {
        const res = await call(e, method, path, { key: publicKey, body: method === "GET" ? undefined : {} });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect((await json(res)).error.code).toBe("forbidden_role");
      }
    }
  });

  it("switching methods on admin paths without a key is 401, never 404 or 405", async () => {
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
      for (const path of ["/admin/keys", "/admin/solutions", "/admin/does-not-exist", "/admin/"]) {
        const res = await call(e, method, path);
        expect(res.status, `${method} ${path}`).toBe(401);
      }
    }
  });

  it("a key on a wrong method gets a JSON 405 with Allow; on an unknown path a JSON 404", async () => {
    const put = await call(e, "PUT", "/admin/keys", { key: e.adminKey, body: {} });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, POST, HEAD");
    expect((await json(put)).error).toMatchObject({
      code: "method_not_allowed",
      details: { allow: ["GET", "POST", "HEAD"] },
    });
    const solve = await call(e, "GET", "/v1/solve", { key: e.adminKey });
    expect(solve.status).toBe(405);
    expect(solve.headers.get("allow")).toBe("POST");
    expect(await json(solve)).toMatchObject({
      error: { code: "method_not_allowed", message: "/v1/solve answers POST, not GET." },
      requestId: expect.any(String),
    });
    // Paths with parameters too; every POST-only and DELETE-only route.
    for (const [method, path, allow] of [
      ["GET", "/admin/solutions", "POST"],
      ["GET", "/admin/uploads", "POST"],
      ["DELETE", "/v1/library/prb_x", "GET, HEAD"],
      ["GET", `/admin/blocks/${"a".repeat(64)}`, "DELETE"],
      ["GET", "/admin/flywheel/fly_x/accept", "POST"],
      ["PUT", "/health", "GET, HEAD"],
    ] as const) {
      const res = await call(e, method, path, { key: e.adminKey });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get("allow"), `${method} ${path}`).toBe(allow);
    }
    const unknown = await call(e, "GET", "/v1/nothing-here", { key: e.adminKey });
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error.code).toBe("route_not_found");
  });

  it("keys: created once in plaintext, listed without secrets", async () => {
    const created = await call(e, "POST", "/admin/keys", {
      key: e.adminKey,
      body: { role: "admin", label: "ops" },
    });
    expect(created.status).toBe(201);
    const body = await json(created);
    expect(body.key).toMatch(/^kvg_[0-9A-Za-z]{8}_[0-9A-Za-z]{32}$/);
    expect((await call(e, "GET", "/admin/keys", { key: body.key })).status).toBe(200);
    const list = await (await call(e, "GET", "/admin/keys", { key: e.adminKey })).text();
    expect(list).not.toContain(body.key);
    expect(list).not.toContain('"hash"');
    expect((await call(e, "DELETE", "/admin/keys/key_nope", { key: e.adminKey })).status).toBe(404);
    const bad = await call(e, "POST", "/admin/keys", { key: e.adminKey, body: { role: "root", label: "x" } });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error.code).toBe("invalid_request");
  });
});

describe("request bodies", () => {
  let e: Awaited<ReturnType<typeof edge>>;
  beforeAll(async () => {
    e = await edge({ KVGRAFT_MAX_BODY_BYTES: "1024", KVGRAFT_ADMIN_MAX_BODY_BYTES: "4096" });
  });

  it("413 body_too_large over the limit (Content-Length)", async () => {
    const res = await call(e, "POST", "/v1/solve", { key: e.adminKey, body: { problem: "x".repeat(2000) } });
    expect(res.status).toBe(413);
    expect((await json(res)).error.code).toBe("body_too_large");
    const admin = await call(e, "POST", "/admin/keys", {
      key: e.adminKey,
      body: { role: "public", label: "x".repeat(5000) },
    });
    expect(admin.status).toBe(413);
  });

  it("an answer given without reading the body closes the connection, and says so; one that read it keeps it", async () => {
    /** One request on a fresh socket: the answer's head and whether the server closed the socket. */
    const exchange = (path: string, body: string) =>
      new Promise<{ head: string; closed: boolean }>((resolve) => {
        const socket = connect(e.port, "127.0.0.1");
        let got = "";
        let closed = false;
        socket.on("data", (d) => {
          got += d.toString("latin1");
        });
        socket.on("error", () => undefined); // the rest of an unread body may meet a closed socket
        socket.on("close", () => {
          closed = true;
        });
        socket.write(
          `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${e.adminKey}\r\n` +
            `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        setTimeout(() => {
          socket.destroy();
          resolve({ head: got.split("\r\n\r\n")[0] ?? "", closed });
        }, 500);
      });
    // Over the limit (declared length): 413 before the body is read; the server will not read on.
    const big = await exchange("/v1/solve", JSON.stringify({ problem: "x".repeat(20_000) }));
    expect(big.head).toMatch(/^HTTP\/1\.1 413/);
    expect(big.head.toLowerCase()).toContain("connection: close");
    expect(big.closed).toBe(true);
    // A body that was read (a key created): the connection stays open for the next request.
    const read = await exchange("/admin/keys", JSON.stringify({ role: "public", label: "kept" }));
    expect(read.head).toMatch(/^HTTP\/1\.1 201/);
    expect(read.head.toLowerCase()).toContain("connection: keep-alive");
    expect(read.closed).toBe(false);
  });

  it("413 for a chunked body that grows past the limit", async () => {
    const chunk = new TextEncoder().encode(`{"problem":"${"y".repeat(600)}`);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(chunk);
        controller.enqueue(chunk);
        controller.close();
      },
    });
    const res = await fetch(`${e.url}/v1/solve`, {
      method: "POST",
      headers: { authorization: `Bearer ${e.adminKey}`, "content-type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
  });

  it("400 invalid_json for malformed or empty JSON", async () => {
    for (const rawBody of ['{"problem": ', "not json", "", "{'a':1}"]) {
      const res = await call(e, "POST", "/v1/solve", { key: e.adminKey, rawBody });
      expect(res.status, JSON.stringify(rawBody)).toBe(400);
      expect((await json(res)).error.code).toBe("invalid_json");
    }
  });

  it("400 invalid_request with the failing fields", async () => {
    for (const body of [
      {},
      { problem: "" },
      { problem: "1+1", maxTokens: 0 },
      { problem: "1+1", extra: 1 },
      [1],
    ]) {
      const res = await call(e, "POST", "/v1/solve", { key: e.adminKey, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      const err = (await json(res)).error;
      expect(err.code).toBe("invalid_request");
      expect(err.details.issues.length).toBeGreaterThan(0);
    }
    const q = await call(e, "GET", "/v1/library?limit=0", { key: e.adminKey });
    expect(q.status).toBe(400);
  });

  it("OpenAI-compatible 400s name the failing field in param and the message", async () => {
    const messages = [{ role: "user", content: "1+1" }];
    for (const [body, param] of [
      [{ model: "kvgraft", messages: [] }, "messages"],
      [{ messages }, "model"],
      [{ model: "kvgraft", messages: [{ content: "1+1" }] }, "messages.0.role"],
      [{ model: "kvgraft", messages, max_tokens: 0 }, "max_tokens"],
    ] as const) {
      const res = await call(e, "POST", "/v1/chat/completions", { key: e.adminKey, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      const err = (await json(res)).error;
      expect(err).toMatchObject({ code: "invalid_request", type: "invalid_request_error", param });
      expect(err.message).toMatch(
        new RegExp(`^The request failed validation: ${param.replaceAll(".", "\\.")}: .+\\.$`),
      );
    }
    // An error that names no field keeps param null.
    const empty = await call(e, "POST", "/v1/chat/completions", { key: e.adminKey, rawBody: "" });
    expect((await json(empty)).error).toMatchObject({ code: "invalid_json", param: null });
  });
});

describe("rate limits", () => {
  it("429 rate_limited with Retry-After after the per-key limit; other keys unaffected", async () => {
    const e = await edge({ KVGRAFT_RATE_LIMIT: "3", KVGRAFT_RATE_PERIOD_S: "60" });
    const other = await json(
      await call(e, "POST", "/admin/keys", { key: e.adminKey, body: { role: "public", label: "o" } }),
    );
    // the key creation above spent one of the admin key's three requests
    expect((await call(e, "GET", "/v1/library", { key: e.adminKey })).status).toBe(200);
    expect((await call(e, "GET", "/v1/library", { key: e.adminKey })).status).toBe(200);
    const limited = await call(e, "GET", "/v1/library", { key: e.adminKey });
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await json(limited)).error.code).toBe("rate_limited");
    expect((await call(e, "GET", "/admin/keys", { key: e.adminKey })).status).toBe(429);
    expect((await call(e, "GET", "/v1/library", { key: other.key })).status).toBe(200);
    // unauthenticated requests are refused before the limiter (no key to count against)
    expect((await call(e, "GET", "/v1/library")).status).toBe(401);
  });
});

describe("solve fast path and library", () => {
  it("answers an exact repeat from libSQL with ZERO requests to the GPU node", async () => {
    const gpu = await gpuServer(() => ({ status: 500, body: "{}" }));
    const e = await edge({ KVGRAFT_GPU_URL: gpu.url });
    const problem = "What is $12 \\times 34$?";
    const row = await seedVerified(e, problem, "408");
    const before = gpu.requests.length;
    // Formatting only: letter case would be another problem (issue 35).
    for (const text of [problem, "What is 12 × 34", "What  is 12*34 ?"]) {
      const res = await call(e, "POST", "/v1/solve", { key: e.adminKey, body: { problem: text } });
      expect(res.status).toBe(200);
      const body = await json(res);
      expect(body).toMatchObject({
        answer: "408",
        source: "library",
        verified: true,
        confidence: 1,
        route: { reason: "fingerprint", problemId: row.id, score: 1 },
        cost: { gpuTokensIn: 0, gpuTokensOut: 0, gpuMs: 0 },
        hashes: { problemFingerprint: row.fingerprint, outputSha256: null },
        queued: false,
      });
      expect(body.requestId).toBe(res.headers.get("x-request-id"));
      expect(body.queryId).toMatch(/^qry_/);
    }
    expect(gpu.requests.length - before).toBe(0);

    // mode "verified" never calls the GPU node either, even without a match
    const none = await json(
      await call(e, "POST", "/v1/solve", { key: e.adminKey, body: { problem: "2+2", mode: "verified" } }),
    );
    expect(none).toMatchObject({
      answer: null,
      source: "none",
      verified: false,
      route: { reason: "mode_verified_only" },
    });
    // library-only without a library entry: none, no GPU call
    const lib = await json(
      await call(e, "POST", "/v1/solve", { key: e.adminKey, body: { problem: "3+3", mode: "library" } }),
    );
    expect(lib).toMatchObject({ source: "none", route: { reason: "mode_library_only" }, queued: true });
    expect(gpu.requests.length - before).toBe(0);

    const list = await json(await call(e, "GET", "/v1/library?limit=10", { key: e.adminKey }));
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({ id: row.id, answer: "408", block: null });
    expect(list.items[0].solutions).toBeUndefined();
    const search = async (q: string) =>
      (await json(await call(e, "GET", `/v1/library?q=${encodeURIComponent(q)}`, { key: e.adminKey }))).items;
    expect(await search("what 34")).toHaveLength(1);
    expect(await search("what 35")).toHaveLength(0);
    expect((await call(e, "GET", `/v1/library?q=${"x".repeat(501)}`, { key: e.adminKey })).status).toBe(400);
    const item = await call(e, "GET", `/v1/library/${row.id}`, { key: e.adminKey });
    expect(item.status).toBe(200);
    expect((await json(item)).problem.normalizedText).toBe(normalizeProblem(problem));
    const missing = await call(e, "GET", "/v1/library/prb_nope", { key: e.adminKey });
    expect(missing.status).toBe(404);
    expect((await json(missing)).error.code).toBe("problem_not_found");
  });
});

describe("GPU node failures", () => {
  afterEach(() => undefined);

  it("GPU node down: 503 gpu_unavailable quickly, with Retry-After", async () => {
    const port = await closedPort();
    const e = await edge({ KVGRAFT_GPU_URL: `http://127.0.0.1:${port}`, KVGRAFT_GPU_TIMEOUT_MS: "5000" });
    const t0 = performance.now();
    const res = await call(e, "POST", "/v1/solve", { key: e.adminKey, body: { problem: "What is 7 + 5?" } });
    const ms = performance.now() - t0;
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBeTruthy();
    expect((await json(res)).error.code).toBe("gpu_unavailable");
    expect(ms).toBeLessThan(5000);
    const logged = await e.db.select().from(queries);
    expect(logged.map((q) => [q.source, q.route])).toEqual([["error", { reason: "gpu_unavailable" }]]);

    // a deposit is refused, not accepted unchecked, and stores nothing; the node may come back: Retry-After
    const dep = await call(e, "POST", "/admin/solutions", {
      key: e.adminKey,
      body: {
        problem: "What is 2 + 3?",
        solution: "2 + 3 = 5.",
        program: "a, b = PARAMS\nprint(a + b)",
        answer: "5",
      },
    });
    expect(dep.status).toBe(503);
    expect(dep.headers.get("retry-after")).not.toBeNull();
    expect((await json(dep)).error.code).toBe("gpu_unavailable");
    expect((await json(await call(e, "GET", "/v1/library", { key: e.adminKey }))).items).toHaveLength(0);

    const health = await call(e, "GET", "/health");
    expect(health.status).toBe(200);
    expect(await json(health)).toMatchObject({
      status: "degraded",
      db: { status: "ok" },
      gpu: { status: "down" },
    });
  });

  it("GPU node hanging: 504 gpu_timeout at the configured timeout", async () => {
    const gpu = await gpuServer(() => "hang");
    const e = await edge({
      KVGRAFT_GPU_URL: gpu.url,
      KVGRAFT_GPU_TIMEOUT_MS: "400",
      KVGRAFT_GPU_HEALTH_TIMEOUT_MS: "300",
    });
    const t0 = performance.now();
    const res = await call(e, "POST", "/v1/solve", { key: e.adminKey, body: { problem: "What is 9 + 5?" } });
    const ms = performance.now() - t0;
    expect(res.status).toBe(504);
    expect((await json(res)).error.code).toBe("gpu_timeout");
    expect(ms).toBeGreaterThanOrEqual(350);
    expect(ms).toBeLessThan(3000);
    // the request that reached it was signed
    const last = gpu.requests.at(-1);
    expect(last?.path).toBe("/v1/solve");
    expect(last?.headers["x-kvgraft-signature"]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("GPU node answering garbage: 502 gpu_bad_response", async () => {
    const gpu = await gpuServer(() => ({ status: 200, body: '{"text": 1}' }));
    const e = await edge({ KVGRAFT_GPU_URL: gpu.url });
    const res = await call(e, "POST", "/v1/solve", { key: e.adminKey, body: { problem: "What is 1 + 5?" } });
    expect(res.status).toBe(502);
    expect((await json(res)).error.code).toBe("gpu_bad_response");
    const html = await gpuServer(() => ({ status: 500, body: "<html>oops</html>" }));
    const e2 = await edge({ KVGRAFT_GPU_URL: html.url });
    const res2 = await call(e2, "POST", "/v1/solve", {
      key: e2.adminKey,
      body: { problem: "What is 1 + 6?" },
    });
    expect(res2.status).toBe(502);
  });

  it("no GPU node configured: library answers work, GPU paths 503", async () => {
    const e = await edge({ KVGRAFT_GPU_SECRET: "" });
    const res = await call(e, "POST", "/v1/solve", { key: e.adminKey, body: { problem: "What is 4 + 4?" } });
    expect(res.status).toBe(503);
    const health = await json(await call(e, "GET", "/health"));
    expect(health).toMatchObject({
      status: "degraded",
      gpu: { status: "not_configured" },
      edge: { runtime: "node" },
    });
  });
});

describe("admin: nodes, uploads, blocks", () => {
  it("registers and lists nodes", async () => {
    const e = await edge();
    const node = {
      id: "gpu-1",
      url: "https://gpu-1.example.com",
      modelFingerprint: "a".repeat(64),
      engineFingerprint: "b".repeat(64),
      capacity: { slots: 4 },
    };
    const res = await call(e, "POST", "/admin/nodes", { key: e.adminKey, body: node });
    expect(res.status).toBe(201);
    expect((await json(res)).node).toMatchObject({ id: "gpu-1", status: "up" });
    const list = await json(await call(e, "GET", "/admin/nodes", { key: e.adminKey }));
    expect(list.nodes.map((n: { id: string }) => n.id)).toEqual(["gpu-1"]);
    const bad = await call(e, "POST", "/admin/nodes", {
      key: e.adminKey,
      body: { ...node, url: "not a url" },
    });
    expect(bad.status).toBe(400);
  });

  it("issues an upload grant the GPU node can check with the shared secret", async () => {
    const e = await edge({ KVGRAFT_GPU_URL: "http://127.0.0.1:9", KVGRAFT_UPLOAD_GRANT_TTL_S: "60" });
    const row = await seedVerified(e, "What is 6 * 7?", "42");
    const body = { problemId: row.id, sha256: "c".repeat(64), sizeBytes: 123_456 };
    const res = await call(e, "POST", "/admin/uploads", { key: e.adminKey, body });
    expect(res.status).toBe(201);
    const grant = await json(res);
    expect(grant.nodeUrl).toBe("http://127.0.0.1:9");
    expect(grant.endpoints.start).toBe("POST http://127.0.0.1:9/v1/imports");
    expect(grant.steps.length).toBeGreaterThanOrEqual(4);
    const checked = await verifyUploadGrant(SECRET, grant.grant);
    expect(checked).toMatchObject({ ok: true, claims: { ...body, v: 1 } });
    expect(await verifyUploadGrant("another-secret-0123456789", grant.grant)).toEqual({
      ok: false,
      code: "grant_invalid",
    });
    expect(await verifyUploadGrant(SECRET, grant.grant, Date.now() + 61_000)).toEqual({
      ok: false,
      code: "grant_expired",
    });
    const tampered = grant.grant.replace(/\.([^.]+)\./, (_m: string, p: string) => `.${p.slice(0, -2)}AA.`);
    expect((await verifyUploadGrant(SECRET, tampered)).ok).toBe(false);
    const missing = await call(e, "POST", "/admin/uploads", {
      key: e.adminKey,
      body: { ...body, problemId: "prb_x" },
    });
    expect(missing.status).toBe(404);
  });

  it("DELETE /admin/blocks/:id of an unknown block is 404", async () => {
    const e = await edge();
    for (const id of ["d".repeat(64), "not-a-hash"]) {
      const res = await call(e, "DELETE", `/admin/blocks/${id}`, { key: e.adminKey });
      expect(res.status).toBe(404);
      expect((await json(res)).error.code).toBe("block_not_found");
    }
  });
});

describe("service routes", () => {
  it("/health without a key; /openapi.json describes the public and admin API", async () => {
    const e = await edge();
    const doc = await json(await call(e, "GET", "/openapi.json"));
    expect(doc.openapi).toBe("3.1.0");
    for (const path of [
      "/v1/solve",
      "/v1/library",
      "/v1/library/{id}",
      "/admin/solutions",
      "/admin/blocks/{id}",
      "/admin/keys",
      "/admin/keys/{id}",
      "/admin/nodes",
      "/admin/uploads",
      "/health",
    ])
      expect(doc.paths[path], path).toBeDefined();
    const solveBody = doc.paths["/v1/solve"].post.requestBody.content["application/json"].schema;
    expect(solveBody.required).toEqual(["problem"]);
    expect(solveBody.properties.mode.enum).toEqual(["auto", "library", "verified"]);
    const unknown = await call(e, "GET", "/nope");
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error.code).toBe("route_not_found");
  });
});
