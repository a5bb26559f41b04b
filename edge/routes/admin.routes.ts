/** The admin API under `/admin` (the app mounts admin auth on the whole prefix first). */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { notFound } from "../../shared/errors.js";
import { readJson } from "../../shared/http/json-body.js";
import { sha256Schema } from "../../shared/protocol.js";
import { upsertNode } from "../db/nodes.js";
import type { AppEnv, Deps } from "../http.js";
import {
  adminBlockRegisterSchema,
  adminSolutionRequestSchema,
  adminSolutionResponseSchema,
  blockSchema,
  keyCreatedSchema,
  keyCreateSchema,
  keyInfoSchema,
  nodeRegisterSchema,
  nodeSchema,
  uploadGrantSchema,
  uploadRequestSchema,
} from "../schemas.js";
import { deleteBlock, depositSolution } from "../services/admin.service.js";
import { createApiKey, listApiKeys, revokeApiKey } from "../services/keys.service.js";
import { issueUploadGrant, registerImportedBlock } from "../services/upload.service.js";
import {
  adminRoute,
  errorResponse,
  gpuErrors,
  idParams,
  jsonBody,
  ok,
  pathId,
  routeGroup,
  serve,
} from "./documented.js";

const blockBody = z.object({ block: blockSchema });
const keyBody = z.object({ key: keyInfoSchema });

const solutionsRoute = adminRoute({
  method: "post",
  path: "/solutions",
  summary:
    "Add a verified solution: the program is checked in the sandbox, the block deposited; another " +
    "solution of a known problem becomes its next version and supersedes the current one",
  request: jsonBody(adminSolutionRequestSchema),
  responses: {
    201: ok(adminSolutionResponseSchema, "Created"),
    200: ok(
      adminSolutionResponseSchema,
      "The same solution is already the problem's current one (created: false); a problem left " +
        "without a ready block gets it deposited again",
    ),
    422: errorResponse("`program_mismatch`, `program_error` or `program_timeout`."),
    502: gpuErrors[502],
    501: errorResponse(
      "`sandbox_unavailable`: the GPU node runs no programs (permanent); nothing was stored.",
    ),
    503: errorResponse(
      "`gpu_unavailable`: the GPU node cannot be reached now (Retry-After); nothing was stored.",
    ),
    504: gpuErrors[504],
  },
});
const registerBlockRoute = adminRoute({
  method: "post",
  path: "/blocks",
  summary: "Register a block imported straight into the GPU node (after POST /admin/uploads)",
  request: jsonBody(adminBlockRegisterSchema),
  responses: {
    201: ok(blockBody, "Registered"),
    404: errorResponse("`problem_not_found` or `block_not_found`."),
    ...gpuErrors,
  },
});
const deleteBlockRoute = adminRoute({
  method: "delete",
  path: "/blocks/{id}",
  summary: "Delete a block on the GPU node and quarantine it in the library",
  request: idParams("Block SHA-256"),
  responses: { 200: ok(blockBody), 404: errorResponse("`block_not_found`."), ...gpuErrors },
});
const listKeysRoute = adminRoute({
  method: "get",
  path: "/keys",
  summary: "List API keys (never their secrets)",
  responses: { 200: ok(z.object({ keys: z.array(keyInfoSchema) })) },
});
const createKeyRoute = adminRoute({
  method: "post",
  path: "/keys",
  summary: "Create an API key; the plaintext is in this response only",
  request: jsonBody(keyCreateSchema),
  responses: { 201: ok(keyCreatedSchema, "Created") },
});
const revokeKeyRoute = adminRoute({
  method: "delete",
  path: "/keys/{id}",
  summary: "Revoke an API key",
  request: idParams("Key id"),
  responses: { 200: ok(keyBody), 404: errorResponse("`api_key_not_found`.") },
});
const registerNodeRoute = adminRoute({
  method: "post",
  path: "/nodes",
  summary: "Register a GPU node (or record its heartbeat)",
  request: jsonBody(nodeRegisterSchema),
  responses: { 201: ok(z.object({ node: nodeSchema }), "Registered") },
});
const uploadsRoute = adminRoute({
  method: "post",
  path: "/uploads",
  summary: "Issue a short-lived signed grant to upload one block file straight to the GPU node",
  request: jsonBody(uploadRequestSchema),
  responses: {
    201: ok(uploadGrantSchema, "Issued"),
    404: errorResponse("`problem_not_found`."),
    503: errorResponse("`gpu_unavailable`: no GPU node configured."),
  },
});

export function adminRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const app = routeGroup();
  serve(app, solutionsRoute, async (c) => {
    // A different solution of a known problem becomes its next version (admin.service.ts).
    const outcome = await depositSolution(deps, await readJson(c, adminSolutionRequestSchema), {
      replace: true,
    });
    return c.json(outcome, outcome.created ? 201 : 200);
  });
  serve(app, registerBlockRoute, async (c) => {
    const block = await registerImportedBlock(deps, await readJson(c, adminBlockRegisterSchema));
    return c.json({ block }, 201);
  });
  serve(app, deleteBlockRoute, async (c) => {
    const id = sha256Schema.safeParse(pathId(c));
    if (!id.success) throw notFound("block_not_found", "No block with this SHA-256.");
    return c.json({ block: await deleteBlock(deps, id.data) }, 200);
  });
  serve(app, listKeysRoute, async (c) => c.json({ keys: await listApiKeys(deps.db) }, 200));
  serve(app, createKeyRoute, async (c) => {
    const input = await readJson(c, keyCreateSchema);
    const created = await createApiKey(deps.db, input);
    return c.json({ ...created, role: input.role, label: input.label }, 201);
  });
  serve(app, revokeKeyRoute, async (c) => c.json({ key: await revokeApiKey(deps.db, pathId(c)) }, 200));
  serve(app, registerNodeRoute, async (c) => {
    const input = await readJson(c, nodeRegisterSchema);
    return c.json({ node: await upsertNode(deps.db, input, new Date(deps.clock.now())) }, 201);
  });
  serve(app, uploadsRoute, async (c) => {
    const input = await readJson(c, uploadRequestSchema);
    return c.json(await issueUploadGrant(deps, input, c.get("principal").keyId), 201);
  });
  return app;
}
