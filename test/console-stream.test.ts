/**
 * The playground's streamed ask (`POST /console/playground/stream`) over plain HTTP, so it runs
 * where no browser is installed (test/console-e2e.test.ts drives the same route from Chromium):
 * a real edge (Node entry, libSQL file) and the loopback GPU node, a session signed in through the
 * console's own form. The answer is server-sent events written by shared/sse.ts: `token` events
 * with the node's text, then `answer` with the rendered panel; a failure before the first event
 * answers with its plain status.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { silentLogger } from "../shared/http/logger.js";
import { type LoopbackGpu, startLoopbackGpu } from "./helpers/loopback-gpu.js";

const SECRET = "console-stream-secret-0123456789abcdef";
const NEW_PROBLEM = "A farmer has 17 sheep and buys 26 more, then sells 9. How many sheep are left?";

let dir: string;
let gpu: LoopbackGpu;
let edge: EdgeServer;
let cookie: string;

/** A form post from the console's own pages (Hono's csrf checks the Origin). */
function post(path: string, form: Record<string, string>, session?: string): Promise<Response> {
  return fetch(`${edge.url}${path}`, {
    method: "POST",
    headers: {
      origin: edge.url,
      "content-type": "application/x-www-form-urlencoded",
      ...(session ? { cookie: session } : {}),
    },
    body: new URLSearchParams(form).toString(),
    redirect: "manual",
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-console-stream-"));
  gpu = await startLoopbackGpu({ sandbox: false });
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: gpu.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_RATE_LIMIT: "100000",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  const signedIn = await post("/console/signin", { key: edge.generatedAdminKey as string });
  expect(signedIn.status).toBe(303);
  cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0] as string;
}, 60_000);

afterAll(async () => {
  await edge?.close();
  await gpu?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the playground's streamed ask", () => {
  it("streams the node's text as token events, then the rendered answer", async () => {
    const res = await post("/console/playground/stream", { problem: NEW_PROBLEM }, cookie);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const body = await res.text();
    const events = body
      .split("\n\n")
      .filter(Boolean)
      .map((block) => {
        const [event, data, ...rest] = block.split("\n");
        expect(rest).toEqual([]);
        expect(event).toMatch(/^event: (token|answer)$/);
        expect(data).toMatch(/^data: \{/);
        return { event: event?.slice(7), data: JSON.parse(data?.slice(6) ?? "") };
      });
    const tokens = events.filter((e) => e.event === "token");
    expect(tokens.map((e) => e.data.text).join("")).toBe("Let me think. No idea.");
    expect(events.at(-1)?.event).toBe("answer");
    expect(events.at(-1)?.data.html).toContain('id="source"');
    expect(body.endsWith("\n\n")).toBe(true);
  });

  it("answers a request refused before the first event with its plain status", async () => {
    const res = await post("/console/playground/stream", { problem: "" }, cookie);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).not.toMatch(/event-stream/);
  });
});
