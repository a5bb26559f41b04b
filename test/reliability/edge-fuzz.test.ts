/**
 * Property-based fuzzing of every edge endpoint over real HTTP, with inputs derived from the
 * zod schemas in edge/schemas.ts (test/reliability/arbitraries.ts): a real edge (libSQL file)
 * in front of a real `kvgraft serve gpu` child (tiny model, Python sandbox when available).
 * Properties: never a 5xx; a 2xx body matches the endpoint's response schema; an invalid input
 * gets a 4xx whose body carries a machine-readable code. Plus the auth cases that
 * test/edge-api.test.ts does not cover.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { healthResponseSchema, nodeViewSchema } from "../../edge/ops-schemas.js";
import { type EdgeServer, startEdgeServer } from "../../edge/runtime/node.js";
import {
  adminBlockRegisterSchema,
  adminSolutionRequestSchema,
  adminSolutionResponseSchema,
  blockSchema,
  errorBodySchema,
  keyCreatedSchema,
  keyCreateSchema,
  keyInfoSchema,
  libraryItemSchema,
  libraryPageSchema,
  libraryQuerySchema,
  nodeRegisterSchema,
  nodeSchema,
  solveRequestSchema,
  solveResponseSchema,
  uploadGrantSchema,
  uploadRequestSchema,
} from "../../edge/schemas.js";
import { silentLogger } from "../../shared/http/logger.js";
import { syntheticModel } from "../helpers/models.js";
import { anyBody, invalid, valid } from "./arbitraries.js";
import { type GpuChild, killHard, startGpuChild, until } from "./helpers.js";

const SECRET = "fuzz-secret-0123456789abcdef";
const RUNS = Number(process.env.KVGRAFT_FUZZ_RUNS ?? 40);
const temp = mkdtempSync(join(tmpdir(), "kvgraft-rel-fuzz-"));
let gpu: GpuChild;
let edge: EdgeServer;
let admin: string;
let publicKey: string;
const seen = new Map<string, Map<number, number>>();

beforeAll(async () => {
  gpu = await startGpuChild({
    modelPath: syntheticModel("tiny-llama"),
    dataDir: join(temp, "gpu"),
    secret: SECRET,
    sandbox: true,
  });
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(temp, "edge.db")}`,
      KVGRAFT_GPU_URL: gpu.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_RATE_LIMIT: "1000000",
      KVGRAFT_SOLVE_MAX_TOKENS: "2",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  admin = edge.generatedAdminKey as string;
  const res = await send("POST", "/admin/keys", JSON.stringify({ role: "public", label: "fuzz" }), admin);
  publicKey = (res.json as { key: string }).key;
});

afterAll(async () => {
  await edge?.close();
  if (gpu) await killHard(gpu);
  rmSync(temp, { recursive: true, force: true });
  // What the fuzzer reached, per endpoint and status (shows the properties were not vacuous).
  const lines = [...seen].map(([k, m]) => `${k}: ${[...m].map(([s, n]) => `${s}x${n}`).join(" ")}`);
  process.stderr.write(
    `edge fuzz statuses\n${lines.join("\n")}\nconnections dropped: ${dropped.length} ${dropped.join(", ")}\n`,
  );
  // A retried drop is tolerated once; more means the edge drops connections, which is a bug.
  expect(dropped.length, dropped.join(", ")).toBeLessThanOrEqual(1);
});

interface Sent {
  status: number;
  json: unknown;
  text: string;
}

/**
 * Connections closed without an answer (the request is then sent once more on a new connection).
 * Seen in about one run in four of this whole file, always on the first POST /admin/solutions,
 * right after /v1/solve's near-miss bodies over the size limit: the edge answered those 413 with
 * "Connection: keep-alive" and then closed the connection (Node's server does not read an
 * unread body on), so the client's pool sent the next requests into closing sockets; once, in
 * CI, the retry met another one. The edge now says "Connection: close" on such answers
 * (edge/runtime/node.ts, test/edge-api.test.ts). Counted and bounded below rather than hidden.
 */
const dropped: string[] = [];

async function send(
  method: string,
  path: string,
  body: string | undefined,
  key: string | null,
): Promise<Sent> {
  const request = () =>
    fetch(`${edge.url}${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body } : {}),
    });
  const res = await request().catch((err: Error & { cause?: { code?: string } }) => {
    if (err.cause?.code !== "UND_ERR_SOCKET") throw err;
    dropped.push(`${method} ${path}`);
    return request();
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const name = `${method} ${path.split("?")[0]?.split("/").slice(0, 3).join("/")}`;
  const counts = seen.get(name) ?? new Map<number, number>();
  counts.set(res.status, (counts.get(res.status) ?? 0) + 1);
  seen.set(name, counts);
  return { status: res.status, json, text };
}

/** The shared properties: no 5xx, 2xx matches `ok`, 4xx is an error body with a code. */
function check(r: Sent, ok: z.ZodType, what: string): void {
  expect(r.status, `${what}: ${r.text.slice(0, 300)}`).toBeLessThan(500);
  if (r.status < 300) {
    const parsed = ok.safeParse(r.json);
    expect(parsed.success, `${what}: response does not match its schema: ${parsed.error?.message}`).toBe(
      true,
    );
  } else {
    const err = errorBodySchema.safeParse(r.json);
    expect(err.success, `${what}: not an error body: ${r.text.slice(0, 200)}`).toBe(true);
    expect(err.data?.error.code).toMatch(/^[a-z][a-z0-9_]*$/);
  }
}

interface BodyEndpoint {
  method: "POST";
  path: string;
  key: () => string;
  request: z.ZodType;
  response: z.ZodType;
  runs?: number;
}

const bodyEndpoints: BodyEndpoint[] = [
  {
    method: "POST",
    path: "/v1/solve",
    key: () => publicKey,
    // The JSON answer; `stream: true` answers server-sent events (test/solve-stream.test.ts).
    request: solveRequestSchema.omit({ stream: true }),
    response: solveResponseSchema,
    runs: 20,
  },
  {
    method: "POST",
    path: "/admin/solutions",
    key: () => admin,
    request: adminSolutionRequestSchema,
    response: adminSolutionResponseSchema,
    runs: 12,
  },
  {
    method: "POST",
    path: "/admin/blocks",
    key: () => admin,
    request: adminBlockRegisterSchema,
    response: z.object({ block: blockSchema }),
  },
  {
    method: "POST",
    path: "/admin/keys",
    key: () => admin,
    request: keyCreateSchema,
    response: keyCreatedSchema,
  },
  {
    method: "POST",
    path: "/admin/nodes",
    key: () => admin,
    request: nodeRegisterSchema,
    response: z.object({ node: nodeSchema }),
  },
  {
    method: "POST",
    path: "/admin/uploads",
    key: () => admin,
    request: uploadRequestSchema,
    response: uploadGrantSchema,
  },
];

describe("every body endpoint, from its zod schema", () => {
  for (const ep of bodyEndpoints) {
    it(`${ep.method} ${ep.path}: schema-valid input never gets a 5xx; 2xx bodies match the response schema`, async () => {
      await fc.assert(
        fc.asyncProperty(valid(ep.request), async (input) => {
          check(await send(ep.method, ep.path, JSON.stringify(input), ep.key()), ep.response, ep.path);
        }),
        { numRuns: Math.min(RUNS, ep.runs ?? RUNS) },
      );
    });

    it(`${ep.method} ${ep.path}: near-miss input gets a 4xx with a code`, async () => {
      await fc.assert(
        fc.asyncProperty(invalid(ep.request), async (input) => {
          const r = await send(ep.method, ep.path, JSON.stringify(input), ep.key());
          expect(r.status, r.text.slice(0, 300)).toBeGreaterThanOrEqual(400);
          check(r, ep.response, ep.path);
        }),
        { numRuns: RUNS },
      );
    });

    it(`${ep.method} ${ep.path}: arbitrary bytes never get a 5xx`, async () => {
      await fc.assert(
        fc.asyncProperty(anyBody, async (body) => {
          check(await send(ep.method, ep.path, body, ep.key()), ep.response, ep.path);
        }),
        { numRuns: RUNS },
      );
    });
  }
});

describe("query, path and method endpoints", () => {
  const queryValue = fc.oneof(
    fc.string({ maxLength: 120 }),
    fc.integer().map(String),
    fc.constantFrom("", "0", "101", "-1", "1e3", "20", "%00", "abc"),
  );

  it("GET /v1/library with schema-valid and arbitrary query strings", async () => {
    const validQuery = valid(libraryQuerySchema) as fc.Arbitrary<Record<string, unknown>>;
    const arbitrary = fc.dictionary(fc.constantFrom("limit", "cursor", "x", "offset"), queryValue, {
      maxKeys: 3,
    });
    await fc.assert(
      fc.asyncProperty(fc.oneof(validQuery, arbitrary), async (q) => {
        const qs = new URLSearchParams(
          Object.entries(q).map(([k, v]): [string, string] => [k, String(v)]),
        ).toString();
        const r = await send("GET", `/v1/library?${qs}`, undefined, publicKey);
        check(r, libraryPageSchema, "/v1/library");
        if (libraryQuerySchema.safeParse(q).success && !("cursor" in q)) expect(r.status).toBe(200);
      }),
      { numRuns: RUNS },
    );
  });

  it("GET /v1/library/:id, DELETE /admin/blocks/:id and /admin/keys/:id with arbitrary ids", async () => {
    const id = fc.oneof(fc.string({ minLength: 1, maxLength: 80 }), fc.stringMatching(/^[0-9a-f]{64}$/));
    await fc.assert(
      fc.asyncProperty(id, async (raw) => {
        const seg = encodeURIComponent(raw);
        check(
          await send("GET", `/v1/library/${seg}`, undefined, publicKey),
          libraryItemSchema,
          "library/:id",
        );
        check(
          await send("DELETE", `/admin/blocks/${seg}`, undefined, admin),
          z.object({ block: blockSchema }),
          "admin/blocks/:id",
        );
        check(
          await send("DELETE", `/admin/keys/${seg}`, undefined, admin),
          z.object({ key: keyInfoSchema }),
          "admin/keys/:id",
        );
      }),
      { numRuns: RUNS },
    );
  });

  it("any method on any path: never a 5xx, unknown routes are 404 route_not_found", async () => {
    const method = fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS");
    const path = fc.oneof(
      fc.constantFrom(
        "/",
        "/v1",
        "/v1/",
        "/admin",
        "/v1/solve/x",
        "/v2/solve",
        "/admin/keys/a/b",
        "/openapi.json",
      ),
      fc
        .array(fc.string({ minLength: 1, maxLength: 10 }), { minLength: 1, maxLength: 4 })
        .map((parts) => `/${parts.map(encodeURIComponent).join("/")}`),
    );
    await fc.assert(
      fc.asyncProperty(method, path, fc.constantFrom(null, "public", "admin"), async (m, p, who) => {
        const key = who === "admin" ? admin : who === "public" ? publicKey : null;
        const r = await send(m, p, m === "GET" || m === "OPTIONS" ? undefined : "{}", key);
        expect(r.status, `${m} ${p}: ${r.text.slice(0, 200)}`).toBeLessThan(500);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it("GET /health, /openapi.json, /admin/keys and /admin/nodes match their schemas", async () => {
    // The fuzzing may have kept the node busy (or marked it down for a moment): it must come back.
    await until(
      async () => {
        const health = await send("GET", "/health", undefined, null);
        expect(health.status).toBe(200);
        return healthResponseSchema.parse(health.json).gpu.status === "ok";
      },
      15_000,
      "GPU node healthy after the fuzzing",
    );
    const doc = await send("GET", "/openapi.json", undefined, null);
    expect(doc.status).toBe(200);
    expect(
      z.object({ openapi: z.string(), paths: z.record(z.string(), z.unknown()) }).parse(doc.json),
    ).toBeTruthy();
    const keys = await send("GET", "/admin/keys", undefined, admin);
    expect(z.object({ keys: z.array(keyInfoSchema) }).parse(keys.json).keys.length).toBeGreaterThanOrEqual(2);
    const nodes = await send("GET", "/admin/nodes", undefined, admin);
    const parsed = z.object({ nodes: z.array(nodeViewSchema) }).safeParse(nodes.json);
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
  });
});

describe("auth cases beyond test/edge-api.test.ts", () => {
  it("any Authorization header that is not a live key is a 401 with an auth code, never a 5xx", async () => {
    const printable = fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
      maxLength: 200,
    });
    const header = fc.oneof(
      printable,
      printable.map((s) => `Bearer ${s}`),
      fc.stringMatching(/^kvg_[A-Za-z0-9]{8}_[A-Za-z0-9]{32,40}$/).map((s) => `Bearer ${s}`),
      fc.constant(`Bearer ${"A".repeat(8000)}`),
    );
    await fc.assert(
      fc.asyncProperty(header, fc.constantFrom("/v1/library", "/admin/keys"), async (h, path) => {
        const res = await fetch(`${edge.url}${path}`, { headers: { authorization: h } });
        const body = errorBodySchema.parse(await res.json());
        expect(res.status, h).toBe(401);
        expect(["auth_missing", "auth_malformed", "auth_invalid"]).toContain(body.error.code);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it("a key with a live key's prefix but another secret is auth_invalid; bearer is case-insensitive", async () => {
    const [, prefix, secret] = /^(kvg_[^_]+)_(.+)$/.exec(publicKey) ?? [];
    const flipped = `${prefix}_${secret?.[0] === "A" ? "B" : "A"}${secret?.slice(1)}`;
    const bad = await send("GET", "/v1/library", undefined, flipped);
    expect(bad.status).toBe(401);
    expect(errorBodySchema.parse(bad.json).error.code).toBe("auth_invalid");
    const lower = await fetch(`${edge.url}/v1/library`, {
      headers: { authorization: `bearer ${publicKey}` },
    });
    expect(lower.status).toBe(200);
  });

  it("a revoked admin key loses admin and public access at once; other keys keep working", async () => {
    const created = await send(
      "POST",
      "/admin/keys",
      JSON.stringify({ role: "admin", label: "soon revoked" }),
      admin,
    );
    const second = keyCreatedSchema.parse(created.json);
    expect((await send("GET", "/admin/keys", undefined, second.key)).status).toBe(200);
    // An admin key may revoke itself; the next request with it is refused.
    expect((await send("DELETE", `/admin/keys/${second.id}`, undefined, second.key)).status).toBe(200);
    for (const path of ["/admin/keys", "/v1/library"]) {
      const r = await send("GET", path, undefined, second.key);
      expect(r.status, path).toBe(401);
      expect(errorBodySchema.parse(r.json).error.code).toBe("auth_revoked");
    }
    expect((await send("GET", "/admin/keys", undefined, admin)).status).toBe(200);
    expect((await send("GET", "/v1/library", undefined, publicKey)).status).toBe(200);
  });
});
