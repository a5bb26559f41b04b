/**
 * /openapi.json is generated from the route definitions: a real edge (Node entry, libSQL file)
 * serves it over loopback; a real OpenAPI validator checks it, and every route the app serves
 * (walked from `app.routes`) must be in it with its method; the web console's HTML pages
 * (`/console`, test/console-e2e.test.ts) are not API and not in it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../edge/app.js";
import { createLocalRateLimiter } from "../edge/rate-limit.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { silentLogger } from "../shared/http/logger.js";

type Doc = { openapi: string; paths: Record<string, Record<string, unknown>> } & Record<string, unknown>;

/** The served API routes (method and OpenAPI path) that `doc` does not describe; middleware excluded. */
function undocumented(app: { routes: readonly { method: string; path: string }[] }, doc: Doc): string[] {
  return app.routes
    .filter((r) => r.method !== "ALL" && r.path !== "/console" && !r.path.startsWith("/console/"))
    .map((r) => ({ method: r.method.toLowerCase(), path: r.path.replaceAll(/:([^/]+)/g, "{$1}") }))
    .filter((r) => doc.paths[r.path]?.[r.method] === undefined)
    .map((r) => `${r.method.toUpperCase()} ${r.path}`);
}

let dir: string;
let edge: EdgeServer;
let doc: Doc;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-openapi-"));
  edge = await startEdgeServer({
    env: { LIBSQL_URL: `file:${join(dir, "edge.db")}`, KVGRAFT_GPU_SECRET: "openapi-test-secret-0123456789" },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  const res = await fetch(`${edge.url}/openapi.json`);
  expect(res.status).toBe(200);
  doc = (await res.json()) as Doc;
});

afterAll(async () => {
  await edge?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe("3.1.0");
  });

  it("describes every route the app serves", () => {
    const served = edge.app.routes.filter((r) => r.method !== "ALL");
    expect(served.length).toBeGreaterThan(20);
    expect(undocumented(edge.app, doc)).toEqual([]);
  });

  it("the check finds a route added without a definition", async () => {
    const app = createApp({
      db: edge.db,
      gpu: edge.gpu,
      rateLimiter: createLocalRateLimiter({ limit: 10, windowS: 60 }),
      config: edge.config,
    });
    app.get("/admin/undocumented", (c) => c.text("x"));
    const own = (await (await app.request("/openapi.json")).json()) as Doc;
    expect(undocumented(app, own)).toEqual(["GET /admin/undocumented"]);
  });

  it("documents the cluster and flywheel routes the hand-written document lacked", () => {
    for (const [path, method] of [
      ["/admin/nodes/metrics", "get"],
      ["/admin/blocks/{id}/placement", "get"],
      ["/admin/rebalance", "get"],
      ["/admin/rebalance", "post"],
      ["/admin/flywheel", "get"],
      ["/admin/flywheel/{id}/accept", "post"],
      ["/cluster/heartbeat", "post"],
    ] as const)
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
  });
});
