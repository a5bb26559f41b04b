import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { DomainError, tooManyRequests } from "../errors.js";
import { NonceCache, signRequest } from "../signing.js";
import { ConfigError, intSetting, logLevelSetting, parseEnv } from "./config.js";
import { onError, routeNotFound } from "./errors.js";
import { readJson } from "./json-body.js";
import { createLogger } from "./logger.js";
import { type RequestIdEnv, requestId } from "./request-id.js";
import { annotateRequest, requestLog } from "./request-log.js";
import { declaredLengthLimit, signatureAuth } from "./signature.js";

const SECRET = "toolkit-secret-0123456789";

function recordingLogger(level: "debug" | "info" = "info") {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level, write: (line) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

function toolkitApp() {
  const { logger, lines } = recordingLogger();
  const app = new Hono<RequestIdEnv>();
  app.use("*", requestId({ acceptIncoming: true }));
  app.use("*", requestLog(logger, { skip: (c) => c.req.path === "/health" }));
  app.onError(onError({ logger, authenticate: 'Bearer realm="test"' }));
  app.notFound(routeNotFound());
  app.get("/health", (c) => c.text("ok"));
  app.post("/items/:id", async (c) => {
    const body = await readJson(c, z.object({ n: z.number().int() }).strict());
    annotateRequest(c, { keyId: "key-1", source: "library" });
    return c.json({ id: c.req.param("id"), n: body.n });
  });
  app.post("/defaults", async (c) =>
    c.json(await readJson(c, z.object({ n: z.number().default(7) }), { emptyAsObject: true })),
  );
  app.get("/busy", () => {
    throw tooManyRequests("queue_full", "The queue is full.", 0.2);
  });
  app.get("/locked", () => {
    throw new DomainError(401, "key_missing", "No key.");
  });
  app.get("/broken", () => {
    throw new Error("secret internals");
  });
  return { app, lines };
}

describe("error mapping, JSON bodies and request ids", () => {
  it("answers domain errors with their status, code and headers", async () => {
    const { app } = toolkitApp();
    const busy = await app.request("/busy");
    expect(busy.status).toBe(429);
    expect(busy.headers.get("retry-after")).toBe("1");
    const body = (await busy.json()) as { error: { code: string }; requestId: string };
    expect(body.error.code).toBe("queue_full");
    expect(body.requestId).toBe(busy.headers.get("x-request-id"));
    const locked = await app.request("/locked");
    expect(locked.status).toBe(401);
    expect(locked.headers.get("www-authenticate")).toBe('Bearer realm="test"');
  });

  it("reads JSON bodies: invalid_json, invalid_request with issues, empty as {} where allowed", async () => {
    const { app } = toolkitApp();
    const post = (path: string, body: string) => app.request(path, { method: "POST", body });
    const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;
    expect(await codeOf(await post("/items/a", "{nope"))).toBe("invalid_json");
    expect(await codeOf(await post("/items/a", ""))).toBe("invalid_json");
    const invalid = await post("/items/a", JSON.stringify({ n: 1.5, extra: 1 }));
    expect(invalid.status).toBe(400);
    const detail = (await invalid.json()) as {
      error: { code: string; details: { issues: { path: string }[] } };
    };
    expect(detail.error.code).toBe("invalid_request");
    expect(detail.error.details.issues.map((i) => i.path).sort()).toEqual(["", "n"]);
    expect(await (await post("/defaults", " ")).json()).toEqual({ n: 7 });
  });

  it("hides unknown errors behind a 500 naming the request id, and logs the stack", async () => {
    const { app, lines } = toolkitApp();
    const res = await app.request("/broken", { headers: { "x-request-id": "edge-req-1" } });
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).not.toContain("secret internals");
    expect(JSON.parse(text)).toEqual({
      error: { code: "internal_error", message: "Internal server error." },
      requestId: "edge-req-1",
    });
    const logged = lines.find((l) => l.message === "unhandled error");
    expect(logged).toMatchObject({ level: "error", requestId: "edge-req-1", path: "/broken" });
    expect(String(logged?.error)).toContain("secret internals");
  });

  it("answers unknown routes with 404 route_not_found", async () => {
    const { app } = toolkitApp();
    const res = await app.request("/nowhere");
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("route_not_found");
  });

  it("replaces a malformed incoming request id with a fresh one", async () => {
    const { app } = toolkitApp();
    const res = await app.request("/health", { headers: { "x-request-id": "bad id with spaces" } });
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("request log", () => {
  it("writes one line per request with route pattern, status, duration, request id and annotations", async () => {
    const { app, lines } = toolkitApp();
    const res = await app.request("/items/42", {
      method: "POST",
      body: JSON.stringify({ n: 3 }),
      headers: { "x-request-id": "r-1" },
    });
    expect(res.status).toBe(200);
    await app.request("/busy");
    await app.request("/health");
    const requests = lines.filter((l) => l.message === "request");
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({
      level: "info",
      method: "POST",
      route: "/items/:id",
      status: 200,
      requestId: "r-1",
      keyId: "key-1",
      source: "library",
    });
    expect(typeof requests[0]?.durationMs).toBe("number");
    expect(typeof requests[0]?.time).toBe("string");
    expect(requests[1]).toMatchObject({ route: "/busy", status: 429, code: "queue_full" });
  });

  it("drops lines below the configured level", () => {
    const { logger, lines } = recordingLogger("info");
    logger.debug("hidden");
    logger.child({ component: "x" }).warn("shown", { error: new Error("why") });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: "warn", message: "shown", component: "x" });
    expect(String(lines[0]?.error)).toContain("Error: why");
  });
});

describe("signature middleware", () => {
  function signedApp(notBeforeS?: number) {
    const { logger } = recordingLogger();
    const app = new Hono<RequestIdEnv>();
    app.use("*", requestId());
    app.onError(onError({ logger }));
    app.use("*", declaredLengthLimit(64));
    app.use(
      "*",
      signatureAuth({
        secret: SECRET,
        nonces: new NonceCache(),
        maxBodyBytes: 64,
        ...(notBeforeS !== undefined ? { notBeforeS } : {}),
      }),
    );
    app.post("/echo", async (c) => c.text(await c.req.text()));
    return app;
  }
  const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

  it("accepts a signed request once, with its body readable by the handler", async () => {
    const app = signedApp();
    const headers = await signRequest({ secret: SECRET, method: "POST", path: "/echo", body: "hello" });
    const ok = await app.request("/echo", { method: "POST", body: "hello", headers });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe("hello");
    const replay = await app.request("/echo", { method: "POST", body: "hello", headers });
    expect(await codeOf(replay)).toBe("signature_replayed");
  });

  it("refuses unsigned, altered, too early and oversized requests", async () => {
    const app = signedApp(Math.floor(Date.now() / 1000));
    expect((await app.request("/echo", { method: "POST", body: "x" })).status).toBe(401);
    const headers = await signRequest({ secret: SECRET, method: "POST", path: "/echo", body: "hello" });
    const altered = await app.request("/echo", { method: "POST", body: "HELLO", headers });
    expect(await codeOf(altered)).toBe("body_hash_mismatch");
    const old = await signRequest({
      secret: SECRET,
      method: "POST",
      path: "/echo",
      body: "x",
      now: Date.now() - 10_000,
    });
    expect(await codeOf(await app.request("/echo", { method: "POST", body: "x", headers: old }))).toBe(
      "signature_replayed",
    );
    const big = "y".repeat(100);
    const bigHeaders = await signRequest({ secret: SECRET, method: "POST", path: "/echo", body: big });
    const tooBig = await app.request("/echo", { method: "POST", body: big, headers: bigHeaders });
    expect(tooBig.status).toBe(413);
    expect(await codeOf(tooBig)).toBe("body_too_large");
  });
});

describe("configuration parsing", () => {
  const schema = z.object({
    PORT: intSetting(1, 65_535, 8080),
    KVGRAFT_LOG_LEVEL: logLevelSetting,
    NAME: z.string().min(1),
  });

  it("treats empty strings as unset and applies defaults", () => {
    expect(parseEnv(schema, { PORT: "", NAME: "n", OTHER: 1 })).toEqual({
      PORT: 8080,
      KVGRAFT_LOG_LEVEL: "info",
      NAME: "n",
    });
  });

  it("names every invalid setting in one ConfigError", () => {
    const attempt = () => parseEnv(schema, { PORT: "0", KVGRAFT_LOG_LEVEL: "loud" }, "test configuration");
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(/^invalid test configuration: PORT: .*; KVGRAFT_LOG_LEVEL: .*; NAME: /);
  });
});
