/**
 * The OpenAI-compatible API with the official `openai` npm client, pointed at a real edge on
 * loopback in front of a real GPU node (tiny random-weight model): chat completions whole and
 * streamed for a library problem (0 GPU tokens) and a new one (a graft), the model list, errors
 * in OpenAI's shape, and a client that leaves mid-stream cancelling the GPU work (node metrics).
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type EdgeWithGpu,
  GRAFT_PROBLEM,
  LIBRARY_PROBLEM,
  MAX_TOKENS,
  metricsUntil,
  metricValue,
  startEdgeWithGpu,
} from "./helpers/edge-gpu.js";

// biome-ignore lint/suspicious/noExplicitAny: the kvgraft extension is checked by the assertions
type Json = Record<string, any>;

let env: EdgeWithGpu;
let client: OpenAI;

// The library problem is deposited through the sandbox: without bubblewrap every test here skips.

beforeAll(async () => {
  env = await startEdgeWithGpu();
  // A public key, made as any key is: the client sends it as its bearer token.
  const res = await fetch(`${env.edge.url}/admin/keys`, {
    method: "POST",
    headers: { authorization: `Bearer ${env.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ role: "public", label: "openai client" }),
  });
  const { key } = (await res.json()) as { key: string };
  client = new OpenAI({ baseURL: `${env.edge.url}/v1`, apiKey: key, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await env?.close();
});

const ask = (problem: string) => [
  { role: "system" as const, content: "Solve the problem." },
  { role: "user" as const, content: problem },
];

/** The text, the last chunk's kvgraft extension and the chunks of a streamed completion. */
async function streamed(problem: string, maxTokens: number) {
  const stream = await client.chat.completions.create({
    model: "kvgraft",
    messages: ask(problem),
    max_completion_tokens: maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
  const last = chunks.findLast((c) => c.choices.length > 0) as OpenAI.ChatCompletionChunk & { kvgraft: Json };
  return { text, chunks, last, usage: chunks.at(-1)?.usage };
}

describe("OpenAI-compatible chat completions through the openai client", () => {
  it("answers a library problem from the library, with 0 GPU tokens", async () => {
    const completion = await client.chat.completions.create({
      model: "kvgraft",
      messages: ask(LIBRARY_PROBLEM),
    });
    expect(completion.object).toBe("chat.completion");
    expect(completion.choices[0]?.message).toMatchObject({ role: "assistant", content: "17" });
    expect(completion.choices[0]?.finish_reason).toBe("stop");
    expect(completion.usage).toMatchObject({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
    expect((completion as unknown as { kvgraft: Json }).kvgraft).toMatchObject({
      answer: "17",
      source: "library",
      verified: true,
      cost: { gpuTokensIn: 0, gpuTokensOut: 0 },
    });
  });

  it("answers a new problem with the GPU node (a graft of the library problem's block)", async () => {
    const completion = await client.chat.completions.create({
      model: "kvgraft",
      messages: ask(GRAFT_PROBLEM),
      max_tokens: 12,
    });
    const ext = (completion as unknown as { kvgraft: Json }).kvgraft;
    expect(ext).toMatchObject({ source: "graft", verified: false });
    expect(completion.usage?.completion_tokens).toBe(ext.cost.gpuTokensOut);
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    expect(completion.choices[0]?.message.content).not.toBe("");
  });

  it("streams a library answer as one content chunk, then finish_reason, usage and [DONE]", async () => {
    const { text, chunks, last, usage } = await streamed(LIBRARY_PROBLEM, 12);
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    expect(text).toBe("17");
    expect(last.choices[0]?.finish_reason).toBe("stop");
    expect(last.kvgraft).toMatchObject({ source: "library", cost: { gpuTokensOut: 0 } });
    expect(usage).toMatchObject({ completion_tokens: 0 });
  });

  it("streams a new problem's tokens as they come: the same text as the whole answer", async () => {
    const { text, chunks, last, usage } = await streamed(GRAFT_PROBLEM, 12);
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(1);
    expect(last.kvgraft).toMatchObject({ source: "graft" });
    expect(usage?.completion_tokens).toBe(last.kvgraft.cost.gpuTokensOut);
    const whole = await client.chat.completions.create({
      model: "kvgraft",
      messages: ask(GRAFT_PROBLEM),
      max_completion_tokens: 12,
    });
    expect(text).toBe(whole.choices[0]?.message.content);
  });

  it("lists the models, one per solve mode", async () => {
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(["kvgraft", "kvgraft-library", "kvgraft-verified"]);
    expect((await client.models.retrieve("kvgraft-verified")).owned_by).toBe("kvgraft");
  });

  it("answers errors in OpenAI's shape, so the client raises its own error classes", async () => {
    const badKey = new OpenAI({ baseURL: `${env.edge.url}/v1`, apiKey: "sk-nope", maxRetries: 0 });
    const auth = await badKey.models.list().catch((e: unknown) => e);
    expect(auth).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((auth as InstanceType<typeof OpenAI.APIError>).type).toBe("authentication_error");

    const model = await client.chat.completions
      .create({ model: "gpt-4o", messages: ask(LIBRARY_PROBLEM) })
      .catch((e: unknown) => e);
    expect(model).toBeInstanceOf(OpenAI.NotFoundError);
    expect((model as InstanceType<typeof OpenAI.APIError>).code).toBe("model_not_found");

    const empty = await client.chat.completions
      .create({ model: "kvgraft", messages: [{ role: "system", content: "no question" }] })
      .catch((e: unknown) => e);
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError);
    expect((empty as InstanceType<typeof OpenAI.APIError>).code).toBe("no_user_message");
  });

  it("cancels the GPU work when the client leaves mid-stream", async () => {
    const labels = { kind: "graft", finish_reason: "aborted" };
    const before = await env.gpu.metrics();
    const stream = await client.chat.completions.create({
      model: "kvgraft",
      messages: ask(GRAFT_PROBLEM),
      max_completion_tokens: MAX_TOKENS,
      stream: true,
    });
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) break;
    stream.controller.abort();
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
