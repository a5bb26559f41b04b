/**
 * The OpenAPI 3.1 document of the public and admin API, built from the same zod schemas the
 * routes validate with (zod 4's `z.toJSONSchema`; request bodies in their input form).
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "./http.js";
import * as s from "./schemas.js";

type Schema = z.ZodType;

function json(schema: Schema, io: "input" | "output" = "output"): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return rest;
}

const errorRef = { $ref: "#/components/schemas/Error" };
const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: errorRef } },
});

/** Standard error responses of an authenticated route. */
function authErrors(admin: boolean) {
  return {
    "400": errorResponse("`invalid_json` or `invalid_request` (details.issues lists what failed)."),
    "401": errorResponse("`auth_missing`, `auth_malformed`, `auth_invalid` or `auth_revoked`."),
    ...(admin ? { "403": errorResponse("`forbidden_role`: the key is not an admin key.") } : {}),
    "413": errorResponse("`body_too_large`."),
    "429": errorResponse("`rate_limited`; see the Retry-After header."),
  };
}

const gpuErrors = {
  "502": errorResponse("`gpu_bad_response`: the GPU node answered something the edge cannot use."),
  "503": errorResponse("`gpu_unavailable`: no GPU node reachable (Retry-After)."),
  "504": errorResponse("`gpu_timeout`: the GPU node did not answer in time."),
};

function op(opts: {
  summary: string;
  tag: "public" | "admin" | "service";
  auth?: boolean;
  body?: Schema;
  ok: Schema | null;
  okStatus?: string;
  more?: Record<string, unknown>;
  params?: { name: string; in: "path" | "query"; schema: Record<string, unknown>; description?: string }[];
}) {
  return {
    summary: opts.summary,
    tags: [opts.tag],
    ...(opts.auth === false ? { security: [] } : {}),
    ...(opts.params ? { parameters: opts.params.map((p) => ({ required: p.in === "path", ...p })) } : {}),
    ...(opts.body
      ? {
          requestBody: {
            required: true,
            content: { "application/json": { schema: json(opts.body, "input") } },
          },
        }
      : {}),
    responses: {
      [opts.okStatus ?? "200"]: {
        description: "Success",
        ...(opts.ok ? { content: { "application/json": { schema: json(opts.ok) } } } : {}),
      },
      ...(opts.auth === false ? {} : authErrors(opts.tag === "admin")),
      ...opts.more,
    },
  };
}

const idParam = (description: string) => ({
  name: "id",
  in: "path" as const,
  schema: { type: "string" },
  description,
});

/** Builds the document (cheap; the app builds it once). */
export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    info: {
      title: "kvgraft edge",
      version: "0.1.0",
      description:
        "Answers math problems from a library of verified solutions and byte-exact KV-cache blocks. " +
        "Every error body is {error: {code, message, details?}, requestId}. A path asked with a method " +
        "it does not answer is a 405 `method_not_allowed` with an `Allow` header listing the methods it does.",
    },
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "kvg_<prefix>_<secret>" } },
      schemas: { Error: json(s.errorBodySchema) },
    },
    security: [{ bearer: [] }],
    paths: {
      "/health": {
        get: op({
          summary: "Edge, database and GPU node state (ok | degraded: 200; down: 503)",
          tag: "service",
          auth: false,
          ok: s.healthResponseSchema,
          more: {
            "503": {
              description: "The database is unreachable.",
              content: { "application/json": { schema: json(s.healthResponseSchema) } },
            },
          },
        }),
      },
      "/openapi.json": {
        get: op({ summary: "This document", tag: "service", auth: false, ok: null }),
      },
      "/v1/solve": {
        post: op({
          summary: "Solve a problem: verified library answer, transfer, graft, or the plain model",
          tag: "public",
          body: s.solveRequestSchema,
          ok: s.solveResponseSchema,
          more: gpuErrors,
        }),
      },
      "/v1/library": {
        get: op({
          summary: "List the library as summaries (answer, current solution, ready block), oldest first",
          tag: "public",
          ok: s.libraryPageSchema,
          params: [
            {
              name: "limit",
              in: "query",
              schema: { type: "integer", minimum: 1, maximum: 100, default: 20 },
            },
            {
              name: "cursor",
              in: "query",
              schema: { type: "string" },
              description: "nextCursor of the previous page",
            },
            {
              name: "q",
              in: "query",
              schema: { type: "string", minLength: 1, maxLength: 500 },
              description:
                "Only problems containing every word (stemmed, case-insensitive) and every number of q",
            },
          ],
          more: { "400": errorResponse("`cursor_invalid`, `invalid_request`.") },
        }),
      },
      "/v1/library/{id}": {
        get: op({
          summary: "One library entry: the problem, every solution version, every block with its manifest",
          tag: "public",
          ok: s.libraryItemSchema,
          params: [idParam("Problem id")],
          more: { "404": errorResponse("`problem_not_found`.") },
        }),
      },
      "/admin/solutions": {
        post: op({
          summary:
            "Add a verified solution: the program is checked in the sandbox, the block deposited; another " +
            "solution of a known problem becomes its next version and supersedes the current one",
          tag: "admin",
          body: s.adminSolutionRequestSchema,
          ok: s.adminSolutionResponseSchema,
          okStatus: "201",
          more: {
            "200": {
              description:
                "The same solution is already the problem's current one (created: false); a problem left " +
                "without a ready block gets it deposited again",
              content: { "application/json": { schema: json(s.adminSolutionResponseSchema) } },
            },
            "422": errorResponse("`program_mismatch`, `program_error` or `program_timeout`."),
            "503": errorResponse("`sandbox_unavailable` or `gpu_unavailable`: nothing was stored."),
            "502": gpuErrors["502"],
            "504": gpuErrors["504"],
          },
        }),
      },
      "/admin/blocks": {
        post: op({
          summary: "Register a block imported straight into the GPU node (after POST /admin/uploads)",
          tag: "admin",
          body: s.adminBlockRegisterSchema,
          ok: z.object({ block: s.blockSchema }),
          okStatus: "201",
          more: { "404": errorResponse("`problem_not_found` or `block_not_found`."), ...gpuErrors },
        }),
      },
      "/admin/blocks/{id}": {
        delete: op({
          summary: "Delete a block on the GPU node and quarantine it in the library",
          tag: "admin",
          ok: z.object({ block: s.blockSchema }),
          params: [idParam("Block SHA-256")],
          more: { "404": errorResponse("`block_not_found`."), ...gpuErrors },
        }),
      },
      "/admin/keys": {
        get: op({
          summary: "List API keys (never their secrets)",
          tag: "admin",
          ok: z.object({ keys: z.array(s.keyInfoSchema) }),
        }),
        post: op({
          summary: "Create an API key; the plaintext is in this response only",
          tag: "admin",
          body: s.keyCreateSchema,
          ok: s.keyCreatedSchema,
          okStatus: "201",
        }),
      },
      "/admin/keys/{id}": {
        delete: op({
          summary: "Revoke an API key",
          tag: "admin",
          ok: z.object({ key: s.keyInfoSchema }),
          params: [idParam("Key id")],
          more: { "404": errorResponse("`api_key_not_found`.") },
        }),
      },
      "/admin/nodes": {
        get: op({
          summary: "List registered GPU nodes",
          tag: "admin",
          ok: z.object({ nodes: z.array(s.nodeSchema) }),
        }),
        post: op({
          summary: "Register a GPU node (or record its heartbeat)",
          tag: "admin",
          body: s.nodeRegisterSchema,
          ok: z.object({ node: s.nodeSchema }),
          okStatus: "201",
        }),
      },
      "/admin/uploads": {
        post: op({
          summary: "Issue a short-lived signed grant to upload one block file straight to the GPU node",
          tag: "admin",
          body: s.uploadRequestSchema,
          ok: s.uploadGrantSchema,
          okStatus: "201",
          more: {
            "404": errorResponse("`problem_not_found`."),
            "503": errorResponse("`gpu_unavailable`: no GPU node configured."),
          },
        }),
      },
    },
  };
}

export function openApiRoutes(): Hono<AppEnv> {
  const doc = openApiDocument();
  return new Hono<AppEnv>().get("/openapi.json", (c) => c.json(doc, 200));
}
