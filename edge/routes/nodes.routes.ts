/**
 * The cluster views under `/admin` (the app mounts them before the other admin routes): the node
 * list with liveness, tiers and per-node metrics, the metrics as Prometheus text, a block's
 * placement, and rebalance progress and trigger.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { notFound } from "../../shared/errors.js";
import { sha256Schema } from "../../shared/protocol.js";
import { renderNodeMetrics } from "../cluster/metrics-text.js";
import { renderWriteMetrics } from "../db/write-state.js";
import type { AppEnv, Deps } from "../http.js";
import {
  nodeViewSchema,
  placementSchema,
  rebalanceReportSchema,
  rebalanceStatusSchema,
} from "../ops-schemas.js";
import { describeNodes } from "../services/nodes.service.js";
import { adminRoute, errorResponse, idParams, ok, pathId, routeGroup, serve } from "./documented.js";

const listRoute = adminRoute({
  method: "get",
  path: "/nodes",
  summary: "GPU nodes with liveness, tiers and this edge's per-node metrics",
  responses: { 200: ok(z.object({ nodes: z.array(nodeViewSchema) })) },
});
const metricsRoute = adminRoute({
  method: "get",
  path: "/nodes/metrics",
  summary: "Per-node metrics in the Prometheus text format",
  responses: {
    200: {
      description: "Prometheus text (version 0.0.4)",
      content: { "text/plain": { schema: z.string() } },
    },
  },
});
const placementRoute = adminRoute({
  method: "get",
  path: "/blocks/{id}/placement",
  summary: "Where a block should live and where it does",
  request: idParams("Block SHA-256"),
  responses: {
    200: ok(z.object({ placement: placementSchema })),
    404: errorResponse("`block_not_found`."),
  },
});
const rebalanceStatusRoute = adminRoute({
  method: "get",
  path: "/rebalance",
  summary: "Rebalance progress: the run in progress and the last one",
  responses: { 200: ok(z.object({ rebalance: rebalanceStatusSchema })) },
});
const rebalanceRunRoute = adminRoute({
  method: "post",
  path: "/rebalance",
  summary: "Run a rebalance now (or join the one in progress) and wait for its report",
  responses: { 200: ok(z.object({ report: rebalanceReportSchema })) },
});

/** Cluster views under `/admin`. */
export function nodeAdminRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const app = routeGroup();
  serve(app, listRoute, async (c) => c.json({ nodes: await describeNodes(deps) }, 200));
  serve(app, metricsRoute, async (c) => {
    const pool = deps.gpu;
    const text =
      renderNodeMetrics(await pool.nodes(), (id) => pool.metrics(id)) + renderWriteMetrics(deps.writes);
    return c.body(text, 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
  });
  serve(app, placementRoute, async (c) => {
    const id = sha256Schema.safeParse(pathId(c));
    if (!id.success) throw notFound("block_not_found", "No block with this SHA-256.");
    const placement = await deps.gpu.placement(id.data);
    if (!placement.known) throw notFound("block_not_found", "No block with this SHA-256.");
    return c.json({ placement }, 200);
  });
  serve(app, rebalanceStatusRoute, (c) => c.json({ rebalance: deps.gpu.rebalancer.status() }, 200));
  serve(app, rebalanceRunRoute, async (c) => c.json({ report: await deps.gpu.rebalancer.run("admin") }, 200));
  return app;
}
