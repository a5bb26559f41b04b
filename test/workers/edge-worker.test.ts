/**
 * The Worker entry (edge/runtime/worker.ts) inside workerd: it builds the app from its bindings, answers
 * /health and /openapi.json, and refuses unauthenticated or malformed admin
 * and API calls before touching the database.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

function get(path: string, init?: RequestInit): Promise<Response> {
  return worker.fetch(new Request(`https://edge.example.com${path}`, init));
}

describe("edge worker in workerd", () => {
  it("answers /health with the edge's state (the database is reached over HTTP)", async () => {
    const res = await get("/health");
    const body = (await res.json()) as Json;
    expect(body.edge).toMatchObject({ status: "ok", runtime: "workers" });
    expect(body.db.status).toBe("ok");
    // The probe write goes over HTTP too.
    expect(body.db).toMatchObject({ writable: true, droppedLogLines: 0 });
    // GPU nodes count once they have sent heartbeats (edge-worker-pool.test.ts sends them).
    expect(["ok", "down"]).toContain(body.gpu.status);
    expect(res.status).toBe(body.status === "down" ? 503 : 200);
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("serves /openapi.json", async () => {
    const res = await get("/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.paths["/admin/solutions"]).toBeDefined();
  });

  it("rejects unauthenticated admin calls with 401, whatever the method", async () => {
    for (const method of ["GET", "POST", "PUT", "DELETE"]) {
      for (const path of ["/admin/keys", "/admin/solutions", "/admin/anything"]) {
        const res = await get(path, { method });
        expect(res.status, `${method} ${path}`).toBe(401);
        const body = (await res.json()) as { error: { code: string } };
        expect(body.error.code).toBe("auth_missing");
        expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
      }
    }
  });

  it("rejects a malformed bearer on the public API with 401 auth_malformed", async () => {
    const res = await get("/v1/solve", {
      method: "POST",
      headers: { authorization: "Bearer nope", "content-type": "application/json" },
      body: JSON.stringify({ problem: "1+1" }),
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("auth_malformed");
  });

  it("unknown routes are a JSON 404", async () => {
    const res = await get("/nope");
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("route_not_found");
  });

  it("serves the web console's sign-in page with its security headers; pages without a session redirect there", async () => {
    const signin = await get("/console/signin");
    expect(signin.status).toBe(200);
    expect(signin.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await signin.text()).toContain('name="key"');
    const page = await get("/console/playground", { redirect: "manual" });
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/console/signin");
  });
});
