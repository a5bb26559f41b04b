/** Server-sent events for streamed grafts and generations. */
import type { StreamEvent } from "../../shared/protocol.js";

const encoder = new TextEncoder();

/** One event in wire format; JSON has no raw newlines, so the data is a single `data:` line. */
export function formatEvent(event: StreamEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/**
 * A `text/event-stream` body that events are pushed into. The response is only built once the
 * first event exists, so work that fails before producing anything can still answer with a plain
 * error status instead of a 200 stream holding one error event.
 */
export class EventChannel {
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private open = true;
  private markStarted!: () => void;
  /** Resolves when the first event was sent. */
  readonly firstEvent = new Promise<void>((resolve) => {
    this.markStarted = resolve;
  });
  /** Whether an event was sent (from then on, failures must travel as `error` events). */
  started = false;
  private readonly body: ReadableStream<Uint8Array>;

  /** `onCancel` runs when the client goes away before the stream ends, so the work can stop. */
  constructor(onCancel: () => void) {
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.controller = controller;
      },
      cancel: () => {
        this.open = false;
        onCancel();
      },
    });
  }

  send(event: StreamEvent): void {
    if (!this.open) return;
    this.controller.enqueue(encoder.encode(formatEvent(event)));
    if (!this.started) {
      this.started = true;
      this.markStarted();
    }
  }

  /** Ends the stream (after the last event); safe to call twice. */
  close(): void {
    if (!this.open) return;
    this.open = false;
    this.controller.close();
  }

  /** The streaming response; events sent so far are delivered first. */
  response(): Response {
    return new Response(this.body, {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
    });
  }
}
