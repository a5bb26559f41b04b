/** `/v1/blocks`: deposit, list, read, stream the state file of, delete, verify and prefetch blocks. */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import type { Hono } from "hono";
import {
  BLOCK_MANIFEST_HEADER,
  type DepositResult,
  depositRequestSchema,
  encodeManifestHeader,
  prefetchRequestSchema,
} from "../../../shared/protocol.js";
import { unavailable } from "../../errors.js";
import { blockIdParam, type GpuEnv, jsonBody, type ServerContext } from "../context.js";

export function blockRoutes(app: Hono<GpuEnv>, ctx: ServerContext): void {
  const { blocks, work } = ctx;
  app.post("/v1/blocks", async (c) => {
    const { text } = await jsonBody(c, depositRequestSchema);
    const manifest = await work.queued(c, () => blocks.deposit(text));
    return c.json({ ...manifest, durable: blocks.durable } satisfies DepositResult, 201);
  });
  app.get("/v1/blocks", (c) => c.json({ blocks: blocks.list() }));
  app.get("/v1/blocks/:id", (c) => c.json(blocks.get(blockIdParam(c))));
  app.get("/v1/blocks/:id/file", async (c) => {
    const id = blockIdParam(c);
    const manifest = blocks.get(id);
    if (!ctx.options.blockFile) throw unavailable("file_unavailable", "this node does not serve block files");
    const path = await ctx.options.blockFile(id);
    const { size } = await stat(path);
    const body = Readable.toWeb(
      createReadStream(path, { highWaterMark: 1 << 20 }),
    ) as ReadableStream<Uint8Array>;
    return new Response(body, {
      status: 200,
      headers: {
        "content-type": "application/octet-stream",
        "content-length": String(size),
        [BLOCK_MANIFEST_HEADER]: encodeManifestHeader(manifest),
        "x-request-id": c.var.requestId,
      },
    });
  });
  app.delete("/v1/blocks/:id", async (c) => {
    await blocks.delete(blockIdParam(c));
    return c.body(null, 204);
  });
  app.post("/v1/blocks/:id/verify", async (c) => {
    const id = blockIdParam(c);
    return c.json(await work.queued(c, () => blocks.verify(id)));
  });
  app.post("/v1/blocks/:id/prefetch", async (c) => {
    const id = blockIdParam(c);
    const { tier } = await jsonBody(c, prefetchRequestSchema);
    return c.json({ blockSha256: id, tier: await work.queued(c, () => blocks.prefetch(id, tier)) });
  });
}
