/**
 * The OpenAI-compatible API: `POST /v1/chat/completions` (whole, or chat.completion.chunk events
 * with `stream: true`), `GET /v1/models` and `GET /v1/models/{id}`. Keys are the same bearer API
 * keys as the rest of /v1; errors are OpenAI's error body (`openAIErrors`).
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { readJson } from "../../shared/http/json-body.js";
import { EVENT_STREAM_HEADERS, eventStream } from "../../shared/sse.js";
import type { AppEnv, Deps } from "../http.js";
import {
  chatCompletionChunkSchema,
  chatCompletionRequestSchema,
  chatCompletionSchema,
  modelListSchema,
  modelSchema,
  openAIErrorSchema,
} from "../openai-schemas.js";
import {
  chatChunkFormat,
  chatCompletion,
  listModels,
  modelInfo,
  openAIError,
  solveRequestOf,
} from "../services/openai.service.js";
import { solveEvents, streamOptions } from "../services/solve-stream.service.js";
import { idParams, jsonBody, jsonContent, pathId, publicRoute, routeGroup, serve } from "./documented.js";
import { solveContext } from "./solve.routes.js";

/** OpenAI's error body for every status the edge can answer. */
const openAIErrorResponses = Object.fromEntries(
  [400, 401, 404, 413, 429, 501, 502, 503, 504].map((status) => [
    status,
    {
      description: "OpenAI's error body; `error.code` is the edge's stable code (see the other routes).",
      content: jsonContent(openAIErrorSchema),
    },
  ]),
);

const chatRoute = publicRoute({
  method: "post",
  path: "/chat/completions",
  summary: "OpenAI-compatible chat completion: the last user message is solved by the solve pipeline",
  request: jsonBody(chatCompletionRequestSchema),
  responses: {
    200: {
      description: "A chat.completion, or with `stream: true` server-sent chat.completion.chunk events.",
      content: {
        ...jsonContent(chatCompletionSchema),
        "text/event-stream": { schema: chatCompletionChunkSchema },
      },
    },
    ...openAIErrorResponses,
  },
});
const modelsRoute = publicRoute({
  method: "get",
  path: "/models",
  summary: "OpenAI-compatible model list: one model per solve mode",
  responses: {
    200: { description: "The models", content: jsonContent(modelListSchema) },
    ...openAIErrorResponses,
  },
});
const modelRoute = publicRoute({
  method: "get",
  path: "/models/{id}",
  summary: "One OpenAI-compatible model",
  request: idParams("Model id"),
  responses: {
    200: { description: "The model", content: jsonContent(modelSchema) },
    ...openAIErrorResponses,
  },
});

/** Rewrites the edge's error answers under this API into OpenAI's error body (status and headers kept). */
export const openAIErrors: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (c.res.status < 400 || !c.res.headers.get("content-type")?.includes("application/json")) return;
  const body = await c.res
    .clone()
    .json()
    .catch(() => null);
  const headers = new Headers(c.res.headers);
  headers.delete("content-length");
  c.res = new Response(JSON.stringify(openAIError(c.res.status, body)), { status: c.res.status, headers });
};

export function openAIRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const app = routeGroup();
  serve(app, chatRoute, async (c) => {
    const req = await readJson(c, chatCompletionRequestSchema);
    const ctx = solveContext(c);
    if (req.stream !== true) return c.json(await chatCompletion(deps, req, ctx), 200);
    const abort = new AbortController();
    const signal = AbortSignal.any([abort.signal, c.req.raw.signal]);
    const events = solveEvents(deps, solveRequestOf(req), ctx, signal);
    const format = chatChunkFormat(req, ctx, deps.clock.now());
    const body = await eventStream(events, format, streamOptions(deps, ctx.requestId, abort));
    return new Response(body, { headers: EVENT_STREAM_HEADERS });
  });
  serve(app, modelsRoute, (c) => c.json(listModels(), 200));
  serve(app, modelRoute, (c) => c.json(modelInfo(pathId(c)), 200));
  return app;
}
