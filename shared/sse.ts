/**
 * Server-sent events, written once for the edge and the GPU node: the wire format of an event, the
 * headers, the bridge from work that pushes events (a token callback) to a generator, and the
 * `text/event-stream` body pulled from a generator. Web streams and TextEncoder only: it runs in
 * the Worker as well as on Node.
 */
import { type ErrorMappingOptions, errorAnswer } from "./http/errors.js";

/** Headers of an event-stream response. */
export const EVENT_STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
};

/** A named event; JSON has no raw newlines, so the data is a single `data:` line. */
export function sseEvent(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** An unnamed event of one line (`data: [DONE]`, or a JSON chunk in the OpenAI streaming format). */
export function sseData(line: string): string {
  return `data: ${line}\n\n`;
}

/** How a stream's events and its late failure are written. */
export interface SseFormat<E> {
  /** Written before the first event, if anything. */
  start?: string;
  event(e: E): string;
  /** A failure after the stream began (its status and body as the error handler would answer). */
  error(status: number, body: unknown): string;
  /** Written after the last event, if anything. */
  end?: string;
}

/** Where a stream's late failures are mapped and what a client that goes away stops. */
export interface SseOptions {
  requestId: string | undefined;
  /** The service's error mapping (a late failure is answered, and logged, as its error handler would). */
  errors: ErrorMappingOptions;
  /** Runs when the client cancels the body, before the events are ended: aborts the work. */
  onCancel: () => void;
}

/**
 * A `text/event-stream` body of `events`. The first event is awaited before the body exists, so
 * work that fails before producing anything throws here and answers with its plain error status;
 * later failures travel as `format.error`. Cancelling the body (the client went away) runs
 * `onCancel` and ends the events.
 */
export async function eventStream<E>(
  events: AsyncGenerator<E, void, undefined>,
  format: SseFormat<E>,
  options: SseOptions,
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
        const { status, body } = errorAnswer(err, options.requestId, options.errors);
        controller.enqueue(encoder.encode(format.error(status, body)));
        controller.close();
      }
    },
    async cancel() {
      cancelled = true;
      options.onCancel();
      // Runs the generator's cleanup once the aborted work has ended it.
      await events.return(undefined).catch(() => undefined);
    },
  });
}

/**
 * The events that `produce` pushes (from a token callback, say), read in batches: each step gives
 * every event pushed since the last one, waiting for one, and the generator ends once `produce`
 * settles, throwing its failure after the events pushed before it. A consumer that leaves before
 * `produce` settled runs `stop`, so the work ends.
 */
export async function* pushedEvents<E>(
  produce: (push: (event: E) => void) => Promise<void>,
  stop: () => void,
): AsyncGenerator<E[], void, undefined> {
  const queue: E[] = [];
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  // Set when `produce` settles (a cast, so the checker does not narrow it to null here).
  let outcome = null as { ok: true } | { ok: false; error: unknown } | null;
  void produce((event) => {
    queue.push(event);
    notify();
  })
    .then(
      () => {
        outcome = { ok: true };
      },
      (error: unknown) => {
        outcome = { ok: false, error };
      },
    )
    .finally(notify);
  try {
    for (;;) {
      if (queue.length) yield queue.splice(0);
      else if (outcome) {
        if (!outcome.ok) throw outcome.error;
        return;
      } else await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    if (!outcome) stop();
  }
}
