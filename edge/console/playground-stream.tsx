/**
 * The playground's streamed ask (`POST /console/playground/stream`, a form post like the page's
 * own): the solve's events as server-sent events for the page's script, `token` with the text the
 * GPU node generates, then `answer` with the answer panel rendered here (the same JSX as the
 * non-streamed page), or `error` with the message of a failure after the stream began. A failure
 * before the first event answers with its status, as the non-streamed ask does.
 */
import type { Context } from "hono";
import { EVENT_STREAM_HEADERS, eventStream, type SseFormat, sseEvent } from "../../shared/sse.js";
import type { AppEnv, Deps } from "../http.js";
import type { SolveRequest } from "../schemas.js";
import { type SolveEvent, solveEvents, streamOptions } from "../services/solve-stream.service.js";
import { Answer } from "./pages/playground.js";

type PlaygroundEvent = { type: "token"; text: string } | { type: "answer"; html: string };

const playgroundFormat: SseFormat<PlaygroundEvent> = {
  event: (e) =>
    e.type === "token" ? sseEvent("token", { text: e.text }) : sseEvent("answer", { html: e.html }),
  error: (status, body) => {
    const message = (body as { error?: { message?: string } }).error?.message ?? "The solve failed.";
    return sseEvent("error", { status, message });
  },
};

/** The solve's events with the result rendered as the answer panel. */
async function* playgroundEvents(events: AsyncGenerator<SolveEvent, void, undefined>) {
  for await (const e of events)
    yield e.type === "token"
      ? ({ type: "token", text: e.text } as const)
      : ({ type: "answer", html: String(await (<Answer result={e.response} />).toString()) } as const);
}

/** Answers a validated ask as a stream; closing the connection aborts the GPU node's work. */
export async function streamAsk(deps: Deps, c: Context<AppEnv>, req: SolveRequest): Promise<Response> {
  const abort = new AbortController();
  const signal = AbortSignal.any([abort.signal, c.req.raw.signal]);
  const ctx = {
    keyId: c.get("principal").keyId,
    requestId: c.get("requestId"),
    startedMs: c.get("startedMs"),
  };
  const body = await eventStream(
    playgroundEvents(solveEvents(deps, req, ctx, signal)),
    playgroundFormat,
    streamOptions(deps, c.get("requestId"), abort),
  );
  return new Response(body, { headers: EVENT_STREAM_HEADERS });
}
