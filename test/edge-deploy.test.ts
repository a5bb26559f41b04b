/**
 * What a real deployment needs from the edge: (1) the GPU node sits behind Cloudflare Access, so
 * every edge-to-node call carries the Access service token (CF-Access-Client-Id/-Secret), from the
 * pool both entries build (`createConfiguredPool`, edge/cluster/gpu-pool.ts); here a loopback gate in front of a
 * real GPU node stands in for Access and refuses calls without the token. (2) With the database
 * unreachable, an authenticated request answers 503 `database_unavailable` with Retry-After and a
 * request id (a real libSQL client whose server refuses the connection), not a 500.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../edge/app.js";
import { createGpuPool } from "../edge/cluster/gpu-pool.js";
import { readEdgeConfig } from "../edge/config.js";
import { databaseFromClient } from "../edge/db/database.js";
import { createLocalRateLimiter } from "../edge/rate-limit.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { ConfigError } from "../shared/http/config.js";
import { silentLogger } from "../shared/http/logger.js";
import { syntheticModel } from "./helpers/models.js";
import { type GpuChild, killHard, startGpuChild } from "./reliability/helpers.js";

const SECRET = "deploy-test-secret-0123456789abcdef";
const TOKEN = { id: "access-client-id.access", secret: "access-client-secret-value" };

let dir: string;
let node: GpuChild;
let gate: Server;
let gateUrl: string;
/** Calls that reached the gate: whether each carried the service token. */
const seen: { path: string; token: boolean }[] = [];

/** Stands in for Cloudflare Access: forwards calls with the service token, refuses the rest with 403. */
function startAccessGate(target: string): Promise<Server> {
  const server = createServer(async (req, res) => {
    const token =
      req.headers["cf-access-client-id"] === TOKEN.id &&
      req.headers["cf-access-client-secret"] === TOKEN.secret;
    seen.push({ path: req.url ?? "", token });
    if (!token) {
      res.writeHead(403, { "content-type": "text/plain" }).end("Forbidden by Access");
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(
        ([k, v]) => typeof v === "string" && !k.startsWith("cf-access-") && k !== "host",
      ),
    ) as Record<string, string>;
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const upstream = await fetch(`${target}${req.url}`, {
      method: req.method,
      headers,
      ...(body ? { body } : {}),
    });
    res.writeHead(upstream.status, Object.fromEntries(upstream.headers));
    res.end(Buffer.from(await upstream.arrayBuffer()));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

async function startEdge(withToken: boolean): Promise<EdgeServer> {
  return startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, `edge-${withToken}.db`)}`,
      KVGRAFT_GPU_URL: gateUrl,
      KVGRAFT_GPU_SECRET: SECRET,
      ...(withToken
        ? { KVGRAFT_ACCESS_CLIENT_ID: TOKEN.id, KVGRAFT_ACCESS_CLIENT_SECRET: TOKEN.secret }
        : {}),
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
}

async function nodesView(edge: EdgeServer) {
  const res = await fetch(`${edge.url}/admin/nodes`, {
    headers: { authorization: `Bearer ${edge.generatedAdminKey}` },
  });
  expect(res.status).toBe(200);
  // biome-ignore lint/suspicious/noExplicitAny: checked by the assertions
  return ((await res.json()) as { nodes: any[] }).nodes;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-deploy-"));
  node = await startGpuChild({
    modelPath: syntheticModel("tiny-llama"),
    dataDir: join(dir, "gpu"),
    secret: SECRET,
    env: { KV_THREADS: "1" },
  });
  gate = await startAccessGate(node.url);
  gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}`;
}, 180_000);

afterAll(async () => {
  gate?.close();
  if (node) await killHard(node);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a GPU node behind Cloudflare Access", () => {
  it("the Node entry sends the service token on its calls to the node, and is refused without it", async () => {
    const withToken = await startEdge(true);
    try {
      seen.length = 0;
      const [view] = await nodesView(withToken);
      expect(view).toMatchObject({ source: "static", live: true, status: "up" });
      expect(view.health).toMatchObject({ status: "ok" });
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.every((call) => call.token)).toBe(true);
    } finally {
      await withToken.close();
    }
    const without = await startEdge(false);
    try {
      seen.length = 0;
      const [view] = await nodesView(without);
      // Access refused the node's /health: the view says so.
      expect(view.health).toEqual({ error: "health: HTTP 403" });
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.some((call) => call.token)).toBe(false);
    } finally {
      await without.close();
    }
  });

  it("the token's two halves go together", () => {
    const base = { LIBSQL_URL: "file:x.db" };
    expect(() => readEdgeConfig({ ...base, KVGRAFT_ACCESS_CLIENT_ID: TOKEN.id })).toThrow(ConfigError);
    expect(() => readEdgeConfig({ ...base, KVGRAFT_ACCESS_CLIENT_SECRET: TOKEN.secret })).toThrow(
      /KVGRAFT_ACCESS_CLIENT_ID/,
    );
    expect(readEdgeConfig(base).gpu.headers).toEqual({});
  });
});

describe("the database unreachable", () => {
  it("an authenticated request is a 503 database_unavailable with Retry-After and a request id", async () => {
    // A port nothing listens on: the libSQL client's connection is refused.
    const closed = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => resolve(port));
      });
    });
    const config = readEdgeConfig({ LIBSQL_URL: `http://127.0.0.1:${closed}` });
    const db = databaseFromClient(createClient({ url: config.db.url }));
    const app = createApp({
      db,
      // No GPU node configured: the request never gets that far.
      gpu: createGpuPool({
        ...config.pool,
        db,
        secret: null,
        staticNode: null,
        timeoutMs: 1000,
        healthTimeoutMs: 1000,
      }),
      rateLimiter: createLocalRateLimiter({ limit: 10, windowS: 60 }),
      config,
      logger: silentLogger,
    });
    const res = await app.request("/v1/solve", {
      method: "POST",
      headers: { authorization: `Bearer kvg_abcdefgh_${"x".repeat(32)}`, "content-type": "application/json" },
      body: JSON.stringify({ problem: "What is 2 plus 2?" }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    const body = (await res.json()) as { error: { code: string }; requestId: string };
    expect(body.error.code).toBe("database_unavailable");
    expect(body.requestId).toBe(res.headers.get("x-request-id"));
  });
});
