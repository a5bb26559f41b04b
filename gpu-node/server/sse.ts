/** Server-sent events for streamed grafts and generations. */
import type { StreamEvent } from "../../shared/protocol.js";

const encoder = new TextEncoder();

/** One event in wire format; JSON has no raw newlines, so the data is a single `data:` line. */
export function formatEvent(event: StreamEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/**
 * A `text/event-stream` response fed by `produce`, which gets a `send` function and must not
 * throw (it reports failures as an `error` event). `onCancel` runs when the client goes away
 * before the stream ends, so the work behind it can stop.
 */
export function sseResponse(
  produce: (send: (event: StreamEvent) => void) => Promise<void>,
  onCancel: () => void,
): Response {
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (event: StreamEvent) => {
        if (open) controller.enqueue(encoder.encode(formatEvent(event)));
      };
      void produce(send).finally(() => {
        if (!open) return;
        open = false;
        controller.close();
      });
    },
    cancel() {
      open = false;
      onCancel();
    },
  });
  return new Response(body, {
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
  });
}
