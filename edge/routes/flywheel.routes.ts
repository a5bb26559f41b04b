/** The flywheel's admin API under `/admin/flywheel` (admin auth is mounted on `/admin/*`). */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { readJson } from "../../shared/http/json-body.js";
import { type AppEnv, type Deps, readQuery } from "../http.js";
import {
  flywheelAcceptSchema,
  flywheelEnqueueSchema,
  flywheelItemSchema,
  flywheelListQuerySchema,
  flywheelProgressSchema,
  flywheelRejectSchema,
} from "../ops-schemas.js";
import {
  acceptFlywheelItem,
  enqueueProblem,
  getFlywheelItem,
  listFlywheelItems,
  rejectFlywheelItem,
} from "../services/flywheel-admin.service.js";
import * as doc from "./documented.js";

const itemBody = z.object({ item: flywheelItemSchema });
const notFoundError = { 404: doc.errorResponse("`flywheel_item_not_found`.") };
/** An optional JSON body (an empty body counts as `{}`). */
const optionalBody = (schema: z.ZodType) => ({
  body: { required: false, content: { "application/json": { schema } } },
});

const listRoute = doc.adminRoute({
  method: "get",
  path: "/",
  summary: "Flywheel progress and queue items (candidates counted, not listed)",
  request: { query: flywheelListQuerySchema },
  responses: {
    200: doc.ok(z.object({ progress: flywheelProgressSchema, items: z.array(flywheelItemSchema) })),
  },
});
const enqueueRoute = doc.adminRoute({
  method: "post",
  path: "/",
  summary: "Queue a problem for a heavier solve (an open item gets the reference answer)",
  request: doc.jsonBody(flywheelEnqueueSchema),
  responses: {
    201: doc.ok(z.object({ item: flywheelItemSchema, created: z.boolean() }), "Queued"),
    200: doc.ok(z.object({ item: flywheelItemSchema, created: z.boolean() }), "Already open"),
  },
});
const getRoute = doc.adminRoute({
  method: "get",
  path: "/{id}",
  summary: "One flywheel item with its candidates",
  request: doc.idParams("Flywheel item id"),
  responses: { 200: doc.ok(itemBody), ...notFoundError },
});
const acceptRoute = doc.adminRoute({
  method: "post",
  path: "/{id}/accept",
  summary: "Accept an item: a queued one takes the reference; a rejected one is judged again and deposited",
  request: { ...doc.idParams("Flywheel item id"), ...optionalBody(flywheelAcceptSchema) },
  responses: {
    200: doc.ok(itemBody),
    ...notFoundError,
    409: doc.errorResponse("`flywheel_item_state` or `flywheel_item_unsolved`."),
    422: doc.errorResponse("`no_matching_candidate`, or the deposit's program check failed."),
  },
});
const rejectRoute = doc.adminRoute({
  method: "post",
  path: "/{id}/reject",
  summary: "Reject a queued item (a rejected one stays as it is)",
  request: { ...doc.idParams("Flywheel item id"), ...optionalBody(flywheelRejectSchema) },
  responses: {
    200: doc.ok(itemBody),
    ...notFoundError,
    409: doc.errorResponse("`flywheel_item_state`."),
  },
});

export function flywheelRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const app = doc.routeGroup();
  doc.serve(app, listRoute, async (c) =>
    c.json(await listFlywheelItems(deps, readQuery(c, flywheelListQuerySchema)), 200),
  );
  doc.serve(app, enqueueRoute, async (c) => {
    const { item, created } = await enqueueProblem(deps, await readJson(c, flywheelEnqueueSchema));
    return c.json({ item, created }, created ? 201 : 200);
  });
  doc.serve(app, getRoute, async (c) => c.json({ item: await getFlywheelItem(deps, doc.pathId(c)) }, 200));
  doc.serve(app, acceptRoute, async (c) => {
    const input = await readJson(c, flywheelAcceptSchema, { emptyAsObject: true });
    return c.json({ item: await acceptFlywheelItem(deps, doc.pathId(c), input) }, 200);
  });
  doc.serve(app, rejectRoute, async (c) => {
    const input = await readJson(c, flywheelRejectSchema, { emptyAsObject: true });
    return c.json({ item: await rejectFlywheelItem(deps, doc.pathId(c), input) }, 200);
  });
  return app;
}
