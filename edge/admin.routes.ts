/** The admin API under `/admin` (the app mounts admin auth on the whole prefix first). */
import { Hono } from "hono";
import { notFound } from "../shared/errors.js";
import { sha256Schema } from "../shared/protocol.js";
import { deleteBlock, depositSolution, issueUploadGrant, registerImportedBlock } from "./admin.service.js";
import { type AppEnv, type Deps, readJson } from "./http.js";
import { createApiKey, listApiKeys, revokeApiKey } from "./keys.service.js";
import { upsertNode } from "./library.service.js";
import { describeNodes } from "./nodes.routes.js";
import {
  adminBlockRegisterSchema,
  adminSolutionRequestSchema,
  keyCreateSchema,
  nodeRegisterSchema,
  uploadRequestSchema,
} from "./schemas.js";

export function adminRoutes(deps: Deps): Hono<AppEnv> {
  return new Hono<AppEnv>()
    .post("/solutions", async (c) => {
      // A different solution of a known problem becomes its next version (admin.service.ts).
      const outcome = await depositSolution(deps, await readJson(c, adminSolutionRequestSchema), {
        replace: true,
      });
      return c.json(outcome, outcome.created ? 201 : 200);
    })
    .post("/blocks", async (c) => {
      const block = await registerImportedBlock(deps, await readJson(c, adminBlockRegisterSchema));
      return c.json({ block }, 201);
    })
    .delete("/blocks/:id", async (c) => {
      const id = sha256Schema.safeParse(c.req.param("id"));
      if (!id.success) throw notFound("block_not_found", "No block with this SHA-256.");
      return c.json({ block: await deleteBlock(deps, id.data) }, 200);
    })
    .get("/keys", async (c) => c.json({ keys: await listApiKeys(deps.db) }, 200))
    .post("/keys", async (c) => {
      const input = await readJson(c, keyCreateSchema);
      const created = await createApiKey(deps.db, input);
      return c.json({ ...created, role: input.role, label: input.label }, 201);
    })
    .delete("/keys/:id", async (c) => c.json({ key: await revokeApiKey(deps.db, c.req.param("id")) }, 200))
    .get("/nodes", async (c) => c.json({ nodes: await describeNodes(deps) }, 200))
    .post("/nodes", async (c) => {
      const input = await readJson(c, nodeRegisterSchema);
      return c.json({ node: await upsertNode(deps.db, input, new Date(deps.clock.now())) }, 201);
    })
    .post("/uploads", async (c) => {
      const input = await readJson(c, uploadRequestSchema);
      return c.json(await issueUploadGrant(deps, input, c.get("principal").keyId), 201);
    });
}
