/**
 * The solve pipeline as a stream of events, for `POST /v1/solve` with `stream: true` and the
 * OpenAI-compatible chat completions: the library fast path and transfers answer at once with the
 * final `result`; grafts and model solves send the GPU node's tokens as the node generates them,
 * then the `result`. A client that goes away aborts the call to the GPU node, whose own stream then
 * ends and frees its slot.
 */
import { badRequest } from "../../shared/errors.js";
import { errorAnswer } from "../../shared/http/errors.js";
import type { Logger } from "../../shared/http/logger.js";
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
  const tokens: string[] = [];
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  // Set by the solve's callbacks (a cast, so the checker does not narrow it to null here).
  let outcome = null as { ok: true; response: SolveResponse } | { ok: false; error: unknown } | null;
  void solve(deps, req, ctx, {
    signal: gpuCall.signal,
    onToken: (text) => {
      tokens.push(text);
      notify();
    },
  })
    .then(
      (response) => {
        outcome = { ok: true, response };
      },
      (error: unknown) => {
        outcome = { ok: false, error };
      },
    )
    .finally(notify);
  try {
    for (;;) {
      // Tokens that arrived together go out as one event.
      if (tokens.length) yield { type: "token", text: tokens.splice(0).join("") };
      if (outcome && !tokens.length) {
        if (!outcome.ok) throw outcome.error;
        yield { type: "result", response: outcome.response };
        return;
      }
      if (!tokens.length) await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    signal.removeEventListener("abort", stop);
    // The consumer left early (or the solve ended): nothing more is read from the GPU node.
    if (!outcome) stop();
  }
}

/** How a stream's events and its late failure are written. */
export interface StreamFormat<E> {
  /** Written before the first event, if anything. */
  start?: string;
  event(e: E): string;
  /** A failure after the stream began (its status and body as the error handler would answer). */
  error(status: number, body: unknown): string;
  /** Written after the last event, if anything. */
  end?: string;
}

/**
 * A `text/event-stream` body of `events`. The first event is awaited before the body exists, so a
 * request that fails before anything was produced (a bad key, an unreachable GPU node) throws here
 * and answers with its plain error status; later failures travel as `format.error`. Cancelling
 * the body (the client went away) aborts `abort` and ends the events.
 */
export async function eventStream<E>(
  events: AsyncGenerator<E, void, undefined>,
  format: StreamFormat<E>,
  abort: AbortController,
  errors: { logger: Logger; requestId: string },
): Promise<ReadableStream<Uint8Array>> {
  const encoder = new TextEncoder();
  const first = await events.next();
  let pending: IteratorResult<E, void> | null = first;
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (format.start) controller.enqueue(encoder.encode(format.start));
    },
    async pull(controller) {
      try {
        const next = pending ?? (await events.next());
        pending = null;
        if (cancelled) return;
        if (next.done) {
          if (format.end) controller.enqueue(encoder.encode(format.end));
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(format.event(next.value)));
      } catch (err) {
        if (cancelled) return;
        const { status, body } = errorAnswer(err, errors.requestId, {
          logger: errors.logger,
          translate: databaseFailure,
        });
        controller.enqueue(encoder.encode(format.error(status, body)));
        controller.close();
      }
    },
    async cancel() {
      cancelled = true;
      abort.abort();
      // Runs the generator's cleanup once the aborted GPU call has ended it.
      await events.return(undefined).catch(() => undefined);
    },
  });
}

/** Headers of an event-stream response. */
export const EVENT_STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
};
