/** `POST /v1/solve`. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { readJson } from "../../shared/http/json-body.js";
import { annotateRequest } from "../../shared/http/request-log.js";
import type { AppEnv, Deps } from "../http.js";
import { solveRequestSchema, solveResponseSchema } from "../schemas.js";
import { solve } from "../services/solve.service.js";
import { gpuErrors, jsonBody, ok, publicRoute, routeGroup, serve } from "./documented.js";

const solveRoute = publicRoute({
  method: "post",
  path: "/solve",
  summary: "Solve a problem: verified library answer, transfer, graft, or the plain model",
  request: jsonBody(solveRequestSchema),
  responses: { 200: ok(solveResponseSchema), ...gpuErrors },
});

export function solveRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const app = routeGroup();
  serve(app, solveRoute, async (c) => {
    const req = await readJson(c, solveRequestSchema);
    const result = await solve(deps, req, {
      keyId: c.get("principal").keyId,
      requestId: c.get("requestId"),
      startedMs: c.get("startedMs"),
    });
    annotateRequest(c, { source: result.source });
    return c.json(result, 200);
  });
  return app;
}
