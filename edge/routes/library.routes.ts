/** `GET /v1/library` (paged summaries, searchable) and `GET /v1/library/:id` (the whole entry). */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { notFound } from "../../shared/errors.js";
import { getLibraryItem, listLibrary } from "../db/library-pages.js";
import { type AppEnv, type Deps, readQuery } from "../http.js";
import { libraryItemSchema, libraryPageSchema, libraryQuerySchema } from "../schemas.js";
import { errorResponse, idParams, ok, pathId, publicRoute, routeGroup, serve } from "./documented.js";

const listRoute = publicRoute({
  method: "get",
  path: "/library",
  summary: "List the library as summaries (answer, current solution, ready block), oldest first",
  request: { query: libraryQuerySchema },
  responses: { 200: ok(libraryPageSchema), 400: errorResponse("`cursor_invalid`, `invalid_request`.") },
});

const itemRoute = publicRoute({
  method: "get",
  path: "/library/{id}",
  summary: "One library entry: the problem, every solution version, every block with its manifest",
  request: idParams("Problem id"),
  responses: {
    200: ok(libraryItemSchema),
    404: errorResponse("`problem_not_found`."),
  },
});

export function libraryRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const app = routeGroup();
  serve(app, listRoute, async (c) => {
    const q = readQuery(c, libraryQuerySchema);
    return c.json(
      await listLibrary(deps.db, { limit: q.limit, cursor: q.cursor ?? null, q: q.q ?? null }),
      200,
    );
  });
  serve(app, itemRoute, async (c) => {
    const item = await getLibraryItem(deps.db, pathId(c));
    if (!item) throw notFound("problem_not_found", "No library entry with this id.");
    return c.json(item, 200);
  });
  return app;
}
