/**
 * Drain state of the node: requests in flight (streams until their body ends) and whether new
 * work is refused. The runtime entry drains on SIGTERM: new work gets 503 `draining`, running
 * requests finish or are aborted at the drain timeout.
 */
import type { Context, MiddlewareHandler } from "hono";
import { unavailable } from "../errors.js";
import type { AdmissionQueue } from "./queue.js";

export class RequestTracker {
  private drainingNow = false;
  private count = 0;

  constructor(private readonly retryAfterS: number) {}

  get draining(): boolean {
    return this.drainingNow;
  }

  /** Requests in progress (streams included) of those the middleware counts. */
  get inFlight(): number {
    return this.count;
  }

  /** Refuse new work from now on. */
  drain(): void {
    this.drainingNow = true;
  }

  /** Throws 503 `draining` once the node drains. */
  assertAccepting(): void {
    if (this.drainingNow)
      throw unavailable("draining", "the node is draining; use another node", this.retryAfterS);
  }

  /** Counts the requests `counted` selects while they run; a stream until its body ends or is cancelled. */
  middleware(counted: (c: Context) => boolean): MiddlewareHandler {
    return async (c, next) => {
      if (!counted(c)) return next();
      this.count++;
      try {
        await next();
      } finally {
        const streaming = c.res.headers.get("content-type")?.startsWith("text/event-stream") && c.res.body;
        if (streaming) c.res = this.countWhileStreaming(c.res);
        else this.count--;
      }
    };
  }

  /** Resolves true once nothing is in flight or queued, false if `timeoutMs` passes first. */
  async waitIdle(queue: AdmissionQueue, timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (this.count > 0 || queue.depth > 0) {
      if (Date.now() >= until) return false;
      await new Promise((r) => setTimeout(r, 25));
    }
    return true;
  }

  private countWhileStreaming(res: Response): Response {
    let done = false;
    const end = () => {
      if (!done) this.count--;
      done = true;
    };
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done: finished, value } = await reader.read();
        if (finished) {
          end();
          controller.close();
        } else controller.enqueue(value);
      },
      async cancel(reason) {
        end();
        await reader.cancel(reason);
      },
    });
    return new Response(body, res);
  }
}
