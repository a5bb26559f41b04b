/**
 * The console's block upload (admin; mounted under the admin guard): the page, the grant, the
 * import steps forwarded to the GPU node (edge/services/upload-proxy.service.ts) and the
 * registration. The import steps carry JSON or raw bytes, which Hono's `csrf` does not look at, so
 * they require an Origin header naming this site themselves.
 */
import { Hono, type MiddlewareHandler } from "hono";
import { z } from "zod";
import { forbidden } from "../../shared/errors.js";
import { sha256Schema } from "../../shared/protocol.js";
import { UPLOAD_GRANT_HEADER } from "../../shared/upload-grant.js";
import { listLibrary } from "../db/library-pages.js";
import type { AppEnv, Deps } from "../http.js";
import { adminBlockRegisterSchema, uploadRequestSchema } from "../schemas.js";
import { issueUploadGrant, registerImportedBlock } from "../services/upload.service.js";
import { forwardImportStep } from "../services/upload-proxy.service.js";
import { UploadsPage } from "./pages/uploads.js";

/** Refuses a request whose Origin is not this site (a cross-site page cannot set it). */
const sameOrigin: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.header("origin") !== new URL(c.req.url).origin)
    throw forbidden("origin_mismatch", "This request must come from the console's own pages.");
  await next();
};

const importId = z.string().regex(/^[0-9A-Za-z_-]{1,64}$/);

/** The upload page and its steps; mount under the admin guard. */
export function uploadConsoleRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const grantOf = (c: { req: { header(name: string): string | undefined } }) =>
    z.string().min(1).max(4096).parse(c.req.header(UPLOAD_GRANT_HEADER));

  app.get("/uploads", async (c) => {
    const page = await listLibrary(deps.db, { limit: 100 });
    return c.html(<UploadsPage problems={page.items.map((i) => ({ id: i.id, problem: i.problem }))} />);
  });
  app.post("/uploads/grant", async (c) => {
    const form = await c.req.parseBody();
    const input = uploadRequestSchema.parse({
      problemId: form.problemId,
      sha256: form.sha256,
      sizeBytes: Number(form.sizeBytes),
    });
    const grant = await issueUploadGrant(deps, input, c.get("principal").keyId);
    return c.json({ grant: grant.grant, expiresAt: grant.expiresAt, chunkBytes: grant.chunkBytes }, 201);
  });
  app.use("/uploads/imports", sameOrigin);
  app.use("/uploads/imports/*", sameOrigin);
  app.post("/uploads/imports", async (c) =>
    forwardImportStep(deps, grantOf(c), { step: "start", body: await c.req.text() }),
  );
  app.put("/uploads/imports/:id/chunks/:index", async (c) =>
    forwardImportStep(deps, grantOf(c), {
      step: "chunk",
      importId: importId.parse(c.req.param("id")),
      index: z.coerce.number().int().nonnegative().parse(c.req.param("index")),
      body: await c.req.arrayBuffer(),
      chunkSha256: sha256Schema.parse(c.req.header("x-kvgraft-chunk-sha256")),
    }),
  );
  app.post("/uploads/imports/:id/commit", async (c) =>
    forwardImportStep(deps, grantOf(c), { step: "commit", importId: importId.parse(c.req.param("id")) }),
  );
  app.post("/uploads/register", async (c) => {
    const form = await c.req.parseBody();
    const input = adminBlockRegisterSchema.parse({ problemId: form.problemId, sha256: form.sha256 });
    return c.json({ block: await registerImportedBlock(deps, input) }, 201);
  });
  return app;
}
