/**
 * `/v1/imports`: chunked uploads of block files built elsewhere (server/imports.ts), and
 * `/v1/imports/bucket`: blocks uploaded to the bucket through presigned URLs (bucket-import.ts);
 * signed by the edge or carrying an upload grant for the one block (server/grants.ts).
 */
import type { Hono } from "hono";
import { z } from "zod";
import {
  type BlockManifest,
  bucketImportSchema,
  CHUNK_SHA256_HEADER,
  gpuPaths,
  importStartSchema,
} from "../../../shared/protocol.js";
import { type GpuEnv, jsonBody, type ServerContext } from "../context.js";
import { importIdSchema } from "../imports.js";

export function importRoutes(app: Hono<GpuEnv>, ctx: ServerContext): void {
  const { imports, grants, blocks } = ctx;
  app.post("/v1/imports", async (c) => {
    ctx.tracker.assertAccepting();
    const req = await jsonBody(c, importStartSchema);
    grants.checkStart(c.var.grant, req);
    const started = await imports.start(req);
    grants.started(c.var.grant, started.importId);
    return c.json(started, 201);
  });
  app.post(gpuPaths.importFromBucket, async (c) => {
    ctx.tracker.assertAccepting();
    const req = await jsonBody(c, bucketImportSchema);
    grants.checkBucketImport(c.var.grant, req);
    const manifest: BlockManifest = await ctx.work.queued(c, () => blocks.importFromBucket(req));
    return c.json(manifest, 201);
  });
  app.put("/v1/imports/:id/chunks/:index", async (c) => {
    const id = importIdSchema.parse(c.req.param("id"));
    grants.checkSession(c.var.grant, id);
    const index = z.coerce.number().int().nonnegative().parse(c.req.param("index"));
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    return c.json(await imports.putChunk(id, index, bytes, c.req.header(CHUNK_SHA256_HEADER)));
  });
  app.post("/v1/imports/:id/commit", async (c) => {
    const id = importIdSchema.parse(c.req.param("id"));
    grants.checkSession(c.var.grant, id);
    imports.assertComplete(id);
    const manifest: BlockManifest = await ctx.work.queued(c, () =>
      imports.commit(id, (path, m) => blocks.importFile(path, m)),
    );
    grants.ended(id);
    return c.json(manifest, 201);
  });
  app.delete("/v1/imports/:id", async (c) => {
    const id = importIdSchema.parse(c.req.param("id"));
    grants.checkSession(c.var.grant, id);
    await imports.abort(id);
    grants.ended(id);
    return c.body(null, 204);
  });
}
