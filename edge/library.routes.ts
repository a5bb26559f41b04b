/** `GET /v1/library` (paged summaries, searchable) and `GET /v1/library/:id` (the whole entry). */
import { Hono } from "hono";
import { notFound } from "../shared/errors.js";
import { type AppEnv, type Deps, readQuery } from "./http.js";
import { getLibraryItem, listLibrary } from "./library.service.js";
import { libraryQuerySchema } from "./schemas.js";

export function libraryRoutes(deps: Deps): Hono<AppEnv> {
  return new Hono<AppEnv>()
    .get("/library", async (c) => {
      const q = readQuery(c, libraryQuerySchema);
      return c.json(
        await listLibrary(deps.db, { limit: q.limit, cursor: q.cursor ?? null, q: q.q ?? null }),
        200,
      );
    })
    .get("/library/:id", async (c) => {
      const item = await getLibraryItem(deps.db, c.req.param("id"));
      if (!item) throw notFound("problem_not_found", "No library entry with this id.");
      return c.json(item, 200);
    });
}
