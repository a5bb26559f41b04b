/**
 * `GET /openapi.json`: the OpenAPI 3.1 document generated from the route definitions themselves
 * (edge/routes/documented.ts), so every route the app serves is in it. Generated once, on the
 * first request, after every route group is mounted.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../http.js";
import { ok, serve, serviceRoute } from "./documented.js";

const openApiRoute = serviceRoute({
  method: "get",
  path: "/openapi.json",
  summary: "This document",
  responses: { 200: ok(z.record(z.string(), z.unknown()).describe("An OpenAPI 3.1 document")) },
});

const INFO = {
  title: "kvgraft edge",
  version: "0.1.0",
  description:
    "Answers math problems from a library of verified solutions and byte-exact KV-cache blocks. " +
    "Every error body is {error: {code, message, details?}, requestId}. A path asked with a method " +
    "it does not answer is a 405 `method_not_allowed` with an `Allow` header listing the methods it does.",
};

/** Serves the app's own document on `app`, which must be the root app (it documents what is mounted on it). */
export function serveOpenApiDocument(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "kvg_<prefix>_<secret>",
  });
  let doc: unknown;
  serve(app, openApiRoute, (c) => {
    doc ??= app.getOpenAPI31Document({ openapi: "3.1.0", info: INFO, security: [{ bearer: [] }] });
    return c.json(doc, 200);
  });
}
