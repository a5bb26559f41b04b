/** `POST /v1/solve`: one JSON answer, or server-sent events with `stream: true`. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { readJson } from "../../shared/http/json-body.js";
import { annotateRequest } from "../../shared/http/request-log.js";
import { EVENT_STREAM_HEADERS, eventStream } from "../../shared/sse.js";
import type { AppContext, AppEnv, Deps } from "../http.js";
import { solveRequestSchema, solveResponseSchema } from "../schemas.js";
import { solve } from "../services/solve.service.js";
import { solveEvents, streamOptions } from "../services/solve-stream.service.js";
import { solveStreamFormat } from "../services/solve-stream-format.js";
import { solveStreamSchema } from "../stream-schemas.js";
import { gpuErrors, jsonBody, jsonContent, publicRoute, routeGroup, serve } from "./documented.js";

const solveRoute = publicRoute({
  method: "post",
  path: "/solve",
  summary: "Solve a problem: verified library answer, transfer, graft, or the plain model",
  request: jsonBody(solveRequestSchema),
  responses: {
    200: {
      description: "The answer: JSON, or with `stream: true` server-sent events.",
      content: { ...jsonContent(solveResponseSchema), "text/event-stream": { schema: solveStreamSchema } },
    },
    ...gpuErrors,
  },
});

/** Who is asking, as the solve service logs it. */
export const solveContext = (c: AppContext) => ({
  keyId: c.get("principal").keyId,
  requestId: c.get("requestId"),
  startedMs: c.get("startedMs"),
});

export function solveRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const app = routeGroup();
  serve(app, solveRoute, async (c) => {
    const req = await readJson(c, solveRequestSchema);
    if (req.stream) {
      const abort = new AbortController();
      const signal = AbortSignal.any([abort.signal, c.req.raw.signal]);
      const events = solveEvents(deps, req, solveContext(c), signal);
      const body = await eventStream(
        events,
        solveStreamFormat,
        streamOptions(deps, c.get("requestId"), abort),
      );
      return new Response(body, { headers: EVENT_STREAM_HEADERS });
    }
    const result = await solve(deps, req, solveContext(c));
    annotateRequest(c, { source: result.source });
    return c.json(result, 200);
  });
  return app;
}
