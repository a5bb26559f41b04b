/**
 * `POST /v1/solve` with `stream: true` through a real edge and a real GPU node on loopback (tiny
 * random-weight model): the library fast path answers with one `result` event and no GPU tokens,
 * grafts and model solves stream the node's tokens before the result, and a client that goes away
 * mid-stream cancels the GPU work (the node's metrics show the generation aborted and its slot free).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse } from "../shared/gpu-client.js";
import {
  type EdgeWithGpu,
  GRAFT_PROBLEM,
  LIBRARY_PROBLEM,
  MAX_TOKENS,
  MODEL_PROBLEM,
  metricsUntil,
  metricValue,
  startEdgeWithGpu,
} from "./helpers/edge-gpu.js";

// biome-ignore lint/suspicious/noExplicitAny: event bodies are checked by the assertions
type Json = Record<string, any>;

let env: EdgeWithGpu;

// The library problem is deposited through the sandbox: without bubblewrap every test here skips.

beforeAll(async () => {
  env = await startEdgeWithGpu();
}, 120_000);

afterAll(async () => {
  await env?.close();
});

function post(body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${env.edge.url}/v1/solve`, {
    method: "POST",
    headers: { authorization: `Bearer ${env.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

/** Every event of a streamed solve. */
async function streamed(body: Json): Promise<{ event: string; data: Json }[]> {
  const res = await post({ ...body, stream: true });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const events: { event: string; data: Json }[] = [];
  for await (const e of readSse(res.body as ReadableStream<Uint8Array>))
    events.push(e as { event: string; data: Json });
  return events;
}

describe("POST /v1/solve with stream: true", () => {
  it("answers the library fast path with one result event and no GPU tokens", async () => {
    const events = await streamed({ problem: LIBRARY_PROBLEM });
    expect(events.map((e) => e.event)).toEqual(["result"]);
    expect(events[0]?.data).toMatchObject({
      answer: "17",
      source: "library",
      verified: true,
      cost: { gpuTokensIn: 0, gpuTokensOut: 0 },
    });
  });

  it("streams a graft's tokens, then the same result as the JSON answer", async () => {
    const events = await streamed({ problem: GRAFT_PROBLEM, maxTokens: 12 });
    const tokens = events.filter((e) => e.event === "token");
    expect(tokens.length).toBeGreaterThan(0);
    expect(events.at(-1)?.event).toBe("result");
    const result = events.at(-1)?.data as Json;
    expect(result).toMatchObject({ source: "graft", route: { decision: "template" } });
    expect(tokens.map((e) => e.data.text).join("")).toBe(result.text);
    // Greedy decoding: the plain JSON answer has the same text and output hash.
    const plain = (await (await post({ problem: GRAFT_PROBLEM, maxTokens: 12 })).json()) as Json;
    expect(plain.text).toBe(result.text);
    expect(plain.hashes.outputSha256).toBe(result.hashes.outputSha256);
  });

  it("streams the model's sampled solve, every sample's tokens before the result", async () => {
    const events = await streamed({ problem: MODEL_PROBLEM, maxTokens: 128 });
    expect(events.filter((e) => e.event === "token").length).toBeGreaterThan(0);
    expect(events.at(-1)?.event).toBe("result");
    const result = events.at(-1)?.data as Json;
    expect(result.source).toBe("model");
    expect(result.cost.gpuTokensOut).toBeGreaterThan(0);
  }, 60_000);

  it("answers a failure before the first event with a plain JSON error", async () => {
    const res = await fetch(`${env.edge.url}/v1/solve`, {
      method: "POST",
      headers: { authorization: "Bearer nope", "content-type": "application/json" },
      body: JSON.stringify({ problem: GRAFT_PROBLEM, stream: true }),
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as Json).error.code).toMatch(/^auth_/);
  });

  it("cancels the GPU work when the client goes away mid-stream", async () => {
    const labels = { kind: "graft", finish_reason: "aborted" };
    const before = await env.gpu.metrics();
    const controller = new AbortController();
    const res = await post(
      { problem: GRAFT_PROBLEM, maxTokens: MAX_TOKENS, stream: true },
      controller.signal,
    );
    const reader = readSse(res.body as ReadableStream<Uint8Array>);
    const first = await reader.next();
    expect(first.value?.event).toBe("token");
    controller.abort();
    await reader.return(undefined).catch(() => undefined);
    // 800 tokens take seconds here; a cancelled graft frees its slot within a few tokens.
    const after = await metricsUntil(
      env.gpu,
      (m) =>
        metricValue(m, "kvgraft_generations_total", labels) ===
          metricValue(before, "kvgraft_generations_total", labels) + 1 &&
        metricValue(m, "kvgraft_slots_busy") === 0 &&
        metricValue(m, "kvgraft_queue_depth") === 0,
    );
    const out = (m: string) => metricValue(m, "kvgraft_tokens_out_total", { kind: "graft" });
    expect(out(after) - out(before)).toBeLessThan(MAX_TOKENS / 2);
  });
});
