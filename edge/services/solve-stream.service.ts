/**
 * The solve pipeline as a stream of events, for `POST /v1/solve` with `stream: true` and the
 * OpenAI-compatible chat completions: the library fast path and transfers answer at once with the
 * final `result`; grafts and model solves send the GPU node's tokens as the node generates them,
 * then the `result`. A client that goes away aborts the call to the GPU node, whose own stream then
 * ends and frees its slot.
 */
import { badRequest } from "../../shared/errors.js";
import { pushedEvents, type SseOptions } from "../../shared/sse.js";
import { databaseFailure } from "../db/availability.js";
import type { Deps } from "../http.js";
import type { SolveRequest, SolveResponse } from "../schemas.js";
import { type SolveContext, solve } from "./solve.service.js";

/** One event of a streamed solve. */
export type SolveEvent = { type: "token"; text: string } | { type: "result"; response: SolveResponse };

/**
 * Solves with events: tokens as they come, then the result. Aborting `signal` (the client went
 * away) aborts the GPU call at once; the generator then ends with the solve's error.
 */
export async function* solveEvents(
  deps: Deps,
  req: SolveRequest,
  ctx: SolveContext,
  signal: AbortSignal,
): AsyncGenerator<SolveEvent, void, undefined> {
  const gpuCall = new AbortController();
  const stop = () => gpuCall.abort(badRequest("client_closed", "The client closed the connection."));
  signal.addEventListener("abort", stop, { once: true });
  // The consumer leaving early (before the solve ended) stops the GPU call: nothing more is read.
  const batches = pushedEvents<SolveEvent>(async (push) => {
    const response = await solve(deps, req, ctx, {
      signal: gpuCall.signal,
      onToken: (text) => push({ type: "token", text }),
    });
    push({ type: "result", response });
  }, stop);
  try {
    for await (const batch of batches) {
      // Tokens that arrived together go out as one event.
      const tokens = batch.filter((e) => e.type === "token");
      if (tokens.length) yield { type: "token", text: tokens.map((e) => e.text).join("") };
      const result = batch.find((e) => e.type === "result");
      if (result) yield result;
    }
  } finally {
    signal.removeEventListener("abort", stop);
  }
}

/**
 * How the edge's event streams map a failure after the stream began (as its error handler would),
 * and what a client that goes away aborts.
 */
export function streamOptions(
  deps: Pick<Deps, "logger">,
  requestId: string,
  abort: AbortController,
): SseOptions {
  return {
    requestId,
    errors: { logger: deps.logger, translate: databaseFailure },
    onCancel: () => abort.abort(),
  };
}
