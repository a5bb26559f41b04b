import { describe, expect, it } from "vitest";
import { DomainError } from "./errors.js";
import { silentLogger } from "./http/logger.js";
import { eventStream, pushedEvents, type SseFormat, sseData, sseEvent } from "./sse.js";

const format: SseFormat<string> = {
  start: ": hello\n\n",
  event: (e) => sseEvent("token", { text: e }),
  error: (status, body) => sseEvent("error", { ...(body as object), status }),
  end: sseData("[DONE]"),
};
const options = (onCancel = () => {}) => ({ requestId: "r1", errors: { logger: silentLogger }, onCancel });

async function text(body: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(body).text();
}

async function* events(items: string[], fail?: Error): AsyncGenerator<string, void, undefined> {
  for (const item of items) yield item;
  if (fail) throw fail;
}

describe("server-sent events", () => {
  it("writes the wire format byte for byte", () => {
    expect(sseEvent("token", { token: 3, text: "a\nb" })).toBe(
      'event: token\ndata: {"token":3,"text":"a\\nb"}\n\n',
    );
    expect(sseData('{"x":1}')).toBe('data: {"x":1}\n\n');
  });

  it("writes start, every event and end", async () => {
    const body = await eventStream(events(["a", "b"]), format, options());
    expect(await text(body)).toBe(
      ': hello\n\nevent: token\ndata: {"text":"a"}\n\nevent: token\ndata: {"text":"b"}\n\ndata: [DONE]\n\n',
    );
  });

  it("throws a failure before the first event, and writes a later one as the error event", async () => {
    const refused = new DomainError(409, "conflict_x", "no");
    await expect(eventStream(events([], refused), format, options())).rejects.toBe(refused);
    const body = await eventStream(events(["a"], refused), format, options());
    expect(await text(body)).toBe(
      ': hello\n\nevent: token\ndata: {"text":"a"}\n\n' +
        'event: error\ndata: {"error":{"code":"conflict_x","message":"no"},"requestId":"r1","status":409}\n\n',
    );
  });

  it("runs onCancel and ends the events when the client cancels", async () => {
    let cancelled = 0;
    let ended = false;
    async function* endless(): AsyncGenerator<string, void, undefined> {
      try {
        for (;;) yield "x";
      } finally {
        ended = true;
      }
    }
    const body = await eventStream(
      endless(),
      format,
      options(() => cancelled++),
    );
    const reader = body.getReader();
    await reader.read();
    await reader.cancel();
    expect(cancelled).toBe(1);
    expect(ended).toBe(true);
  });
});

describe("pushed events", () => {
  it("gives what was pushed together as one batch, then ends when the work settles", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const batches = pushedEvents<number>(
      async (push) => {
        push(1);
        push(2);
        await gate;
        push(3);
      },
      () => {},
    );
    expect((await batches.next()).value).toEqual([1, 2]);
    release();
    expect((await batches.next()).value).toEqual([3]);
    expect((await batches.next()).done).toBe(true);
  });

  it("throws the work's failure after the events pushed before it", async () => {
    const failure = new Error("boom");
    const batches = pushedEvents<number>(
      async (push) => {
        push(1);
        throw failure;
      },
      () => {},
    );
    expect((await batches.next()).value).toEqual([1]);
    await expect(batches.next()).rejects.toBe(failure);
  });

  it("stops the work when the consumer leaves before it settled, not after", async () => {
    let stops = 0;
    const never = pushedEvents<number>(
      async (push) => {
        push(1);
        await new Promise(() => {});
      },
      () => stops++,
    );
    await never.next();
    await never.return(undefined);
    expect(stops).toBe(1);
    const done = pushedEvents<number>(
      async (push) => push(1),
      () => stops++,
    );
    for await (const _ of done) break;
    expect(stops).toBe(1);
  });
});
