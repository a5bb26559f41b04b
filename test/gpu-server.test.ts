/**
 * The GPU node's HTTP service in-process: the real app over a real BlockService and Engine on a
 * generated tiny model, served by @hono/node-server on loopback, driven by the signed client
 * and by raw fetches for everything the client would never send.
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAdaptorServer } from "@hono/node-server";
import fc from "fast-check";
import { Hono } from "hono";
import { Jwt } from "hono/utils/jwt";
import type { HonoJsonWebKey } from "hono/utils/jwt/jws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { SandboxPool } from "../gpu-node/sandbox/pool.js";
import { createGpuApp, type GpuApp, type GpuAppOptions } from "../gpu-node/server/app.js";
import { createGpuClient, GpuError, type GpuNodeClient } from "../shared/gpu-client.js";
import { sha256Hex } from "../shared/hash.js";
import { createLogger, silentLogger } from "../shared/http/logger.js";
import {
  type BlockManifest,
  blockManifestSchema,
  CHUNK_SHA256_HEADER,
  DEADLINE_HEADER,
  type DepositResult,
  errorBodySchema,
  gpuPaths,
  healthSchema,
} from "../shared/protocol.js";
import { signRequest } from "../shared/signing.js";
import { syntheticModel } from "./helpers/models.js";

const SECRET = "test-secret-0123456789abcdef";

/** Serves an app on an ephemeral loopback port. */
async function listen(app: GpuApp["app"]): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createAdaptorServer({ fetch: app.fetch });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ("closeAllConnections" in server) server.closeAllConnections();
      }),
  };
}

/** A signed request whose signature may be computed over something other than what is sent. */
async function rawSigned(
  url: string,
  opts: {
    method?: string;
    path: string;
    body?: string;
    sign?: { secret?: string; path?: string; body?: string; now?: number; nonce?: string };
    headers?: Record<string, string>;
  },
): Promise<Response> {
  const method = opts.method ?? "GET";
  const headers = await signRequest({
    secret: opts.sign?.secret ?? SECRET,
    method,
    path: opts.sign?.path ?? opts.path,
    ...(opts.sign?.body !== undefined || opts.body !== undefined
      ? { body: opts.sign?.body ?? opts.body }
      : {}),
    ...(opts.sign?.now !== undefined ? { now: opts.sign.now } : {}),
    ...(opts.sign?.nonce !== undefined ? { nonce: opts.sign.nonce } : {}),
  });
  return fetch(`${url}${opts.path}`, {
    method,
    headers: { "content-type": "application/json", ...headers, ...opts.headers },
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  });
}

/** A request on its own connection, body written in 1 MiB pieces; resolves at the response. */
function rawPost(
  path: string,
  body: Buffer,
  headers: Record<string, string>,
  method = "POST",
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, server.url);
    const chunked = headers["transfer-encoding"] === "chunked";
    const req = request(
      url,
      { method, agent: false, headers: chunked ? headers : { ...headers, "content-length": body.length } },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => {
          text += d.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    // The server may close the socket mid-upload once it has answered.
    req.on("error", (err) => (req.writableEnded ? undefined : reject(err)));
    for (let off = 0; off < body.length; off += 2 ** 20) req.write(body.subarray(off, off + 2 ** 20));
    req.end();
  });
}

/** Starts a long streamed generation and resolves once it holds a slot (its first token). */
async function holdSlot(c: GpuNodeClient): Promise<{ hold: AbortController; running: Promise<unknown> }> {
  const hold = new AbortController();
  let started!: () => void;
  const first = new Promise<void>((r) => {
    started = r;
  });
  const running = c
    .generateStream(
      { prompt: "Hold the slot:", maxTokens: 800 },
      { signal: hold.signal, onToken: () => started() },
    )
    .catch((e: unknown) => e);
  await first;
  return { hold, running };
}

async function errorCode(res: Response): Promise<string> {
  return errorBodySchema.parse(await res.json()).error.code;
}

/** Sample values of a Prometheus metric line matching `name{...labels}`. */
function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

async function until(check: () => boolean, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  while (!check()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - t0;
}

let engine: Engine;
let blocks: BlockService;
let sandbox: SandboxPool | undefined;
let dataDir: string;
let gpu: GpuApp;
let server: { url: string; close: () => Promise<void> };
let client: GpuNodeClient;
let block: DepositResult;
const BLOCK_TEXT = "Problem: add 17 and 25. Worked solution: 17 + 25 = 42. Answer: 42. ".repeat(3);

function appOptions(extra: Partial<GpuAppOptions> = {}): GpuAppOptions {
  return {
    blocks,
    secret: SECRET,
    fingerprints: { model: engine.modelFingerprint, engine: engine.engineFingerprint },
    dataDir,
    logger: silentLogger,
    ...(sandbox ? { sandbox } : {}),
    ...extra,
  };
}

beforeAll(async () => {
  engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 2, contextSize: 1024 });
  dataDir = mkdtempSync(join(tmpdir(), "kvgraft-gpu-server-"));
  blocks = await BlockService.open({ engine, dataDir });
  // Where bubblewrap is installed the sandbox must start; without it, its tests skip with the reason.
  sandbox = await SandboxPool.create({ concurrency: 1 });
  gpu = createGpuApp(appOptions());
  server = await listen(gpu.app);
  client = createGpuClient({ baseUrl: server.url, secret: SECRET, timeoutMs: 60_000 });
  block = await client.deposit(BLOCK_TEXT);
});

afterAll(async () => {
  await server?.close();
  await gpu?.close();
  await blocks?.close();
  await engine?.dispose();
});

describe("health and auth", () => {
  it("serves /health without a signature", async () => {
    const res = await fetch(`${server.url}/health`);
    expect(res.status).toBe(200);
    const health = healthSchema.parse(await res.json());
    expect(health.status).toBe("ok");
    expect(health.model.sha256).toBe(engine.modelFingerprint.sha256);
    expect(health.engine.id).toBe(engine.engineFingerprint.id);
    expect(health.slots.total).toBe(2);
    expect(health.slots.sizedBy).toBe("config");
    expect(health.queue).toEqual({ depth: 0, capacity: 6 });
    expect(health.tiers.coldCount).toBeGreaterThanOrEqual(1);
    if (sandbox) expect(health.sandbox?.isolation).toBe(sandbox.isolation);
  });

  it("refuses every kind of bad signature with 401 and leaves no trace", async () => {
    const text = "a deposit that must never happen";
    const body = JSON.stringify({ text });
    const before = (await client.listBlocks()).length;
    const path = gpuPaths.blocks;
    const cases: [string, Promise<Response>][] = [
      ["signature_missing", fetch(`${server.url}${path}`, { method: "POST", body })],
      [
        "signature_malformed",
        rawSigned(server.url, { method: "POST", path, body, headers: { "x-kvgraft-signature": "zz" } }),
      ],
      [
        "signature_invalid",
        rawSigned(server.url, { method: "POST", path, body, sign: { secret: "another-secret-of-16+" } }),
      ],
      [
        "signature_invalid",
        rawSigned(server.url, { method: "POST", path, body, sign: { path: gpuPaths.generate } }),
      ],
      [
        "signature_invalid",
        rawSigned(server.url, { method: "POST", path: `${path}?x=1`, body, sign: { path } }),
      ],
      [
        "body_hash_mismatch",
        rawSigned(server.url, { method: "POST", path, body, sign: { body: '{"text":"x"}' } }),
      ],
      [
        "signature_skewed",
        rawSigned(server.url, { method: "POST", path, body, sign: { now: Date.now() - 600_000 } }),
      ],
      [
        "signature_skewed",
        rawSigned(server.url, { method: "POST", path, body, sign: { now: Date.now() + 600_000 } }),
      ],
    ];
    for (const [code, pending] of cases) {
      const res = await pending;
      expect(res.status, code).toBe(401);
      expect(await errorCode(res)).toBe(code);
    }
    expect((await client.listBlocks()).length).toBe(before);
    expect(blocks.list().some((m) => m.textSha256 === block.textSha256)).toBe(true);
  });

  it("refuses a replayed request without repeating its effect", async () => {
    const path = gpuPaths.block(block.sha256);
    const nonce = "ab".repeat(16);
    const now = Date.now();
    const first = await rawSigned(server.url, { method: "GET", path, sign: { nonce, now } });
    expect(first.status).toBe(200);
    const replay = await rawSigned(server.url, { method: "GET", path, sign: { nonce, now } });
    expect(replay.status).toBe(401);
    expect(await errorCode(replay)).toBe("signature_replayed");

    // A replayed deposit must not deposit again (state files of equal text may differ in bytes).
    const body = JSON.stringify({ text: "a deposit sent twice" });
    const depositOnce = () =>
      rawSigned(server.url, {
        method: "POST",
        path: gpuPaths.blocks,
        body,
        sign: { nonce: "cd".repeat(16), now },
      });
    const deposited = await depositOnce();
    expect(deposited.status).toBe(201);
    const { textSha256 } = (await deposited.json()) as BlockManifest;
    const again = await depositOnce();
    expect(again.status).toBe(401);
    expect(await errorCode(again)).toBe("signature_replayed");
    expect((await client.listBlocks()).filter((m) => m.textSha256 === textSha256)).toHaveLength(1);
  });

  it("hides unknown routes and metrics behind the signature", async () => {
    expect((await fetch(`${server.url}/nope`)).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    const signed = await rawSigned(server.url, { path: "/nope" });
    expect(signed.status).toBe(404);
    expect(await errorCode(signed)).toBe("not_found");
  });
});

describe("bad input", () => {
  it("answers oversized bodies with 413 before reading them", async () => {
    // Fresh connections: the server closes one whose body it refused to read.
    const big = await rawPost(gpuPaths.blocks, Buffer.alloc(5 * 2 ** 20, 32), {
      "content-type": "application/json",
    });
    expect(big.status).toBe(413);
    expect(JSON.parse(big.body).error.code).toBe("body_too_large");
    // Without a content length an unsigned body is never read (401), a signed one is bounded while read.
    const chunked = await rawPost(gpuPaths.blocks, Buffer.alloc(5 * 2 ** 20, 32), {
      "transfer-encoding": "chunked",
    });
    expect(chunked.status).toBe(401);
    const body = Buffer.alloc(5 * 2 ** 20, 32);
    const signed = await signRequest({ secret: SECRET, method: "POST", path: gpuPaths.blocks, body });
    const bounded = await rawPost(gpuPaths.blocks, body, { ...signed, "transfer-encoding": "chunked" });
    expect(bounded.status).toBe(413);
    expect(JSON.parse(bounded.body).error.code).toBe("body_too_large");
    const chunk = await rawPost(
      gpuPaths.importChunk("0".repeat(32), 0),
      Buffer.alloc(9 * 2 ** 20),
      {},
      "PUT",
    );
    expect(chunk.status).toBe(413);
  });

  it("answers malformed requests with a 4xx code", async () => {
    const post = (path: string, body: string, headers: Record<string, string> = {}) =>
      rawSigned(server.url, { method: "POST", path, body, headers });
    const cases: [string, number, Promise<Response>][] = [
      ["invalid_json", 400, post(gpuPaths.blocks, "{not json")],
      ["invalid_request", 400, post(gpuPaths.blocks, JSON.stringify({ text: 5 }))],
      ["invalid_request", 400, post(gpuPaths.blocks, JSON.stringify({ text: "a", extra: 1 }))],
      ["invalid_request", 400, post(gpuPaths.graft, JSON.stringify({ blockId: "nope", query: "q" }))],
      ["invalid_request", 400, post(gpuPaths.generate, JSON.stringify({ prompt: "q", maxTokens: 10 ** 6 }))],
      ["context_overflow", 400, post(gpuPaths.generate, JSON.stringify({ prompt: "q", maxTokens: 1024 }))],
      [
        "block_not_found",
        404,
        post(gpuPaths.graft, JSON.stringify({ blockId: "0".repeat(64), query: "q", maxTokens: 1 })),
      ],
      [
        "invalid_deadline",
        400,
        post(gpuPaths.generate, JSON.stringify({ prompt: "q", maxTokens: 1 }), {
          "x-kvgraft-deadline-ms": "soon",
        }),
      ],
      // A stream that fails before its first event is a plain error response, not a stream.
      [
        "block_not_found",
        404,
        post(
          gpuPaths.graft,
          JSON.stringify({ blockId: "0".repeat(64), query: "q", maxTokens: 1, stream: true }),
        ),
      ],
      [
        "context_overflow",
        400,
        post(gpuPaths.generate, JSON.stringify({ prompt: "q", maxTokens: 1024, stream: true })),
      ],
      ["invalid_block_id", 400, rawSigned(server.url, { path: gpuPaths.block("xyz") })],
      ["block_not_found", 404, rawSigned(server.url, { path: gpuPaths.block("f".repeat(64)) })],
      ["invalid_request", 400, post(gpuPaths.prefetch(block.sha256), JSON.stringify({ tier: "frozen" }))],
    ];
    for (const [code, status, pending] of cases) {
      const res = await pending;
      expect(res.status, code).toBe(status);
      expect(await errorCode(res)).toBe(code);
    }
  });

  it("never answers arbitrary JSON with a 5xx", async () => {
    const routes = [
      gpuPaths.blocks,
      gpuPaths.graft,
      gpuPaths.generate,
      gpuPaths.imports,
      gpuPaths.sandboxRun,
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), fc.jsonValue(), async (path, value) => {
        const res = await rawSigned(server.url, { method: "POST", path, body: JSON.stringify(value) });
        await res.body?.cancel();
        expect(res.status).toBeLessThan(500);
      }),
      { numRuns: 60 },
    );
  });
});

describe("blocks over HTTP", () => {
  it("lists, gets, verifies and prefetches a deposited block", async () => {
    expect(block.tokenCount).toBeGreaterThan(10);
    // A node without a bucket: the deposit is on its disk only.
    expect(block.durable).toBe(false);
    expect((await client.listBlocks()).map((m) => m.sha256)).toContain(block.sha256);
    expect({ ...(await client.getBlock(block.sha256)), durable: false }).toEqual(block);
    const check = await client.verifyBlock(block.sha256);
    expect(check.ok).toBe(true);
    expect(check.probeSha256).toBe(block.probe.sha256);
    expect(await client.prefetch(block.sha256, "hot")).toBe("hot");
    // "cold": only onto disk, where it already is (the pool's placement hint).
    expect(await client.prefetch(block.sha256, "cold")).toBe("cold");
    await expect(client.prefetch("f".repeat(64), "cold")).rejects.toMatchObject({ status: 404 });
  });

  it("grafts to the same output over HTTP as in-process, streamed or not", async () => {
    const query = " Question: what is 17 + 25?";
    const local = await blocks.graft(block.sha256, query, { maxTokens: 12 });
    const remote = await client.graft({ blockId: block.sha256, query, maxTokens: 12 });
    expect(remote.outputSha256).toBe(local.outputSha256);
    expect(remote.tokens).toEqual(local.tokens);
    expect(remote.blockSha256).toBe(block.sha256);

    const streamed: number[] = [];
    const summary = await client.graftStream(
      { blockId: block.sha256, query, maxTokens: 12 },
      { onToken: (t) => streamed.push(t) },
    );
    expect(streamed).toEqual(local.tokens);
    expect(summary.outputSha256).toBe(local.outputSha256);

    const plain = await client.generate({ prompt: "Once upon a time", maxTokens: 8 });
    const events = [];
    for await (const e of client.events("generate", { prompt: "Once upon a time", maxTokens: 8 }))
      events.push(e);
    expect(events.at(-1)?.event).toBe("summary");
    expect(events.filter((e) => e.event === "token").map((e) => (e.data as { token: number }).token)).toEqual(
      plain.tokens,
    );
  });

  it("deletes a block", async () => {
    const extra = await client.deposit("a short-lived block");
    await client.deleteBlock(extra.sha256);
    const err = await client.getBlock(extra.sha256).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GpuError);
    expect((err as GpuError).status).toBe(404);
  });
});

describe("deadlines, cancellation and backpressure", () => {
  it("cuts a generation short at its deadline", async () => {
    const result = await client.generate({ prompt: "Once upon a time", maxTokens: 400 }, { deadlineMs: 100 });
    // Decoding checks the deadline after each token, so the first one always comes out.
    expect(result.finishReason).toBe("aborted");
    expect(result.tokensOut).toBeGreaterThan(0);
    expect(result.tokensOut).toBeLessThan(400);
  });

  it("stops a generation whose client disconnects", async () => {
    const before = await client.metrics();
    const aborted0 = metricValue(before, "kvgraft_generations_total", {
      kind: "generate",
      finish_reason: "aborted",
    });
    const out0 = metricValue(before, "kvgraft_tokens_out_total", { kind: "generate" });
    const controller = new AbortController();
    let seen = 0;
    const stream = client
      .generateStream(
        { prompt: "A long story:", maxTokens: 800 },
        {
          signal: controller.signal,
          onToken: () => {
            if (++seen === 2) controller.abort();
          },
        },
      )
      .catch((e: unknown) => e);
    expect(await stream).toBeInstanceOf(Error);
    // 800 tokens take seconds here; a cancelled generation frees its slot within a few tokens.
    await until(() => gpu.queue.depth === 0, 3000);
    const after = await client.metrics();
    expect(
      metricValue(after, "kvgraft_generations_total", { kind: "generate", finish_reason: "aborted" }),
    ).toBe(aborted0 + 1);
    expect(metricValue(after, "kvgraft_tokens_out_total", { kind: "generate" }) - out0).toBeLessThan(100);
    const quick = await client.generate({ prompt: "next", maxTokens: 2 });
    expect(quick.tokensOut).toBe(2);
  });

  it("drops a waiting request whose client gave up, so it never runs", async () => {
    const small = createGpuApp(appOptions({ limits: { concurrency: 1, maxWaiting: 2 } }));
    const smallServer = await listen(small.app);
    try {
      const c = createGpuClient({ baseUrl: smallServer.url, secret: SECRET });
      const { hold, running } = await holdSlot(c);
      const generated0 = metricValue(await c.metrics(), "kvgraft_generations_total", { kind: "generate" });
      // Its client's timeout passes while it waits behind the held slot: the close takes it off
      // the wait list, and the slot it would have had goes to the next request.
      const impatient = createGpuClient({ baseUrl: smallServer.url, secret: SECRET, timeoutMs: 300 });
      const gaveUp = await impatient.generate({ prompt: "I leave", maxTokens: 2 }).catch((e: unknown) => e);
      expect(gaveUp).toBeInstanceOf(Error);
      await until(() => small.queue.depth === 1, 3000);
      hold.abort();
      await running;
      expect((await c.generate({ prompt: "after", maxTokens: 2 })).tokensOut).toBe(2);
      // The held one and "after" ran; the one that left did not.
      const generated = metricValue(await c.metrics(), "kvgraft_generations_total", { kind: "generate" });
      expect(generated - generated0).toBe(2);
    } finally {
      await smallServer.close();
      await small.close();
    }
  });

  it("refuses work beyond the queue with 429 and recovers", async () => {
    const small = createGpuApp(appOptions({ limits: { concurrency: 1, maxWaiting: 1 } }));
    const smallServer = await listen(small.app);
    try {
      const c = createGpuClient({ baseUrl: smallServer.url, secret: SECRET });
      const { hold, running } = await holdSlot(c);
      // A deadline that passes in the queue: 504, and the job never runs.
      const late = await c
        .generate({ prompt: "too slow", maxTokens: 2 }, { deadlineMs: 150 })
        .catch((e: unknown) => e);
      expect((late as GpuError).status).toBe(504);
      expect((late as GpuError).code).toBe("deadline_exceeded");
      expect(small.queue.depth).toBe(1);
      const waiting = c.generate({ prompt: "I wait", maxTokens: 2 });
      await until(() => small.queue.depth === 2, 5000);
      const refused = await c.generate({ prompt: "no room", maxTokens: 2 }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(GpuError);
      expect((refused as GpuError).status).toBe(429);
      expect((refused as GpuError).code).toBe("queue_full");
      expect((refused as GpuError).retryAfterS).toBe(1);
      hold.abort();
      await running;
      expect((await waiting).tokensOut).toBe(2);
      expect((await c.generate({ prompt: "room again", maxTokens: 2 })).tokensOut).toBe(2);
      expect(small.queue.depth).toBe(0);
    } finally {
      await smallServer.close();
      await small.close();
    }
  });
});

describe("imports", () => {
  it("imports a block in chunks, checking every chunk and the whole file, and leaves nothing on failure", async () => {
    // The manifest alone (the deposit's answer also says whether the block is durable).
    const imported = blockManifestSchema.parse(
      await client.deposit("a block built on another node, then shipped here"),
    );
    const bytes = new Uint8Array(readFileSync(join(dataDir, "blocks", `${imported.sha256}.state`)));
    const reference = await client.graft({ blockId: imported.sha256, query: " And then?", maxTokens: 6 });
    await client.deleteBlock(imported.sha256);
    const importsDir = join(dataDir, "imports");
    const chunkBytes = 4096;
    const start = (manifest: BlockManifest) =>
      rawSigned(server.url, {
        method: "POST",
        path: gpuPaths.imports,
        body: JSON.stringify({ manifest, sizeBytes: manifest.sizeBytes, chunkBytes }),
      });
    const put = async (id: string, index: number, data: Uint8Array, sha?: string) => {
      const headers = await signRequest({
        secret: SECRET,
        method: "PUT",
        path: gpuPaths.importChunk(id, index),
        body: data,
      });
      return fetch(`${server.url}${gpuPaths.importChunk(id, index)}`, {
        method: "PUT",
        headers: { ...headers, ...(sha === undefined ? {} : { [CHUNK_SHA256_HEADER]: sha }) },
        body: data,
      });
    };

    // Another model or engine: refused before any upload.
    const otherModel = { ...imported, model: { ...imported.model, sha256: "1".repeat(64) } };
    expect(await errorCode(await start(otherModel))).toBe("model_mismatch");
    const otherEngine = { ...imported, engine: { ...imported.engine, id: "2".repeat(64) } };
    const engineRes = await start(otherEngine);
    expect(engineRes.status).toBe(409);
    expect(await errorCode(engineRes)).toBe("engine_mismatch");

    // Chunk checks, an incomplete commit, then an abort.
    const opened = await start(imported);
    expect(opened.status).toBe(201);
    const { importId, chunkCount } = (await opened.json()) as { importId: string; chunkCount: number };
    expect(chunkCount).toBe(Math.ceil(bytes.length / chunkBytes));
    const first = bytes.subarray(0, chunkBytes);
    expect(await errorCode(await put(importId, 0, first, "0".repeat(64)))).toBe("chunk_hash_mismatch");
    expect(await errorCode(await put(importId, 0, first))).toBe("chunk_hash_missing");
    const short = first.subarray(0, 10);
    expect(await errorCode(await put(importId, 0, short, await sha256Hex(short)))).toBe(
      "chunk_size_mismatch",
    );
    expect(await errorCode(await put(importId, chunkCount, first, await sha256Hex(first)))).toBe(
      "chunk_out_of_range",
    );
    expect((await put(importId, 0, first, await sha256Hex(first))).status).toBe(200);
    const early = await rawSigned(server.url, { method: "POST", path: gpuPaths.importCommit(importId) });
    expect(early.status).toBe(409);
    expect(await errorCode(early)).toBe("import_incomplete");
    expect(readdirSync(importsDir)).toHaveLength(1);
    expect(
      (await rawSigned(server.url, { method: "DELETE", path: gpuPaths.importSession(importId) })).status,
    ).toBe(204);
    expect(readdirSync(importsDir)).toEqual([]);

    // A manifest whose hash the bytes do not match: every chunk passes, the commit does not.
    const lying = { ...imported, sha256: "3".repeat(64) };
    const err = await client.importBlock(lying, bytes, { chunkBytes }).catch((e: unknown) => e);
    expect((err as GpuError).code).toBe("import_hash_mismatch");
    expect(readdirSync(importsDir)).toEqual([]);
    expect(blocks.list().some((m) => m.sha256 === lying.sha256 || m.sha256 === imported.sha256)).toBe(false);

    // The real thing, from a Blob as a Node caller would pass `fs.openAsBlob(path)`.
    const manifest = await client.importBlock(imported, new Blob([bytes]), { chunkBytes });
    expect(manifest).toEqual(imported);
    expect(readdirSync(importsDir)).toEqual([]);
    const again = await client.graft({ blockId: imported.sha256, query: " And then?", maxTokens: 6 });
    expect(again.outputSha256).toBe(reference.outputSha256);
    const dup = await client.importBlock(imported, bytes, { chunkBytes }).catch((e: unknown) => e);
    expect((dup as GpuError).code).toBe("block_exists");
  });
});

describe("sandbox and metrics", () => {
  it("runs a program in the sandbox", async () => {
    const result = await client.sandboxRun({ program: "print(sum(PARAMS))", params: [40, 2], expect: "42" });
    expect(result.verdict).toBe("ok");
    expect(result.answer).toBe("42");
    expect(result.isolation).toBe("wasm");
  });

  it("sheds sandbox runs: a full queue is a 429 with Retry-After, a deadline passed waiting a 504", async () => {
    const tight = await SandboxPool.create({ concurrency: 1, maxQueued: 1, retryAfterS: 3 });
    const shedding = createGpuApp(appOptions({ sandbox: tight }));
    const local = await listen(shedding.app);
    const c = createGpuClient({ baseUrl: local.url, secret: SECRET, timeoutMs: 60_000 });
    const run = (program: string, deadlineMs?: number) =>
      c.send("POST", gpuPaths.sandboxRun, JSON.stringify({ program }), {
        headers: deadlineMs ? { [DEADLINE_HEADER]: String(deadlineMs) } : {},
      });
    try {
      const busy = run("import time\ntime.sleep(2)\nprint(1)");
      await until(() => tight.stats.running === 1, 10_000);
      const late = run("print(2)", 300);
      await until(() => tight.stats.waiting === 1, 10_000);
      const full = await run("print(3)");
      expect(full.status).toBe(429);
      expect(full.headers.get("retry-after")).toBe("3");
      expect(await errorCode(full)).toBe("sandbox_busy");
      const timedOut = await late;
      expect(timedOut.status).toBe(504);
      expect(await errorCode(timedOut)).toBe("deadline_exceeded");
      expect(await (await busy).json()).toMatchObject({ verdict: "ok", answer: "1" });
      expect(tight.stats).toMatchObject({ running: 0, waiting: 0, rejected: 1 });
    } finally {
      await local.close();
      await shedding.close();
    }
  });

  it("logs one JSON line per request with the route pattern, status and the edge's request id", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ write: (line) => lines.push(JSON.parse(line)) });
    const local = createGpuApp(appOptions({ logger }));
    try {
      const viaApp = createGpuClient({
        baseUrl: "http://node.test",
        secret: SECRET,
        headers: { "x-request-id": "edge-req-7" },
        fetch: async (input, init) => local.app.request(String(input), init),
      });
      await viaApp.getBlock(block.sha256);
      await expect(viaApp.getBlock("0".repeat(64))).rejects.toMatchObject({ code: "block_not_found" });
      expect(lines.filter((l) => l.message === "request")).toEqual([
        expect.objectContaining({
          method: "GET",
          route: "/v1/blocks/:id",
          status: 200,
          requestId: "edge-req-7",
        }),
        expect.objectContaining({ route: "/v1/blocks/:id", status: 404, code: "block_not_found" }),
      ]);
      await local.app.request("/health");
      expect(lines.filter((l) => l.message === "request")).toHaveLength(2);
    } finally {
      await local.close();
    }
  });

  it("exposes Prometheus metrics", async () => {
    const text = await client.metrics();
    expect(text).toContain("# TYPE kvgraft_http_requests_total counter");
    expect(
      metricValue(text, "kvgraft_http_requests_total", { route: "/v1/graft", method: "POST", status: "200" }),
    ).toBeGreaterThan(0);
    expect(metricValue(text, "kvgraft_http_requests_total", { status: "401" })).toBeGreaterThan(0);
    expect(text).toMatch(
      /kvgraft_http_request_duration_seconds_bucket\{le="\+Inf",route="\/v1\/graft"\} \d+/,
    );
    expect(metricValue(text, "kvgraft_tier_hits_total", { tier: "hot" })).toBeGreaterThan(0);
    expect(metricValue(text, "kvgraft_tokens_out_total", { kind: "graft" })).toBeGreaterThan(0);
    expect(metricValue(text, "kvgraft_queue_depth")).toBe(0);
    expect(metricValue(text, "kvgraft_queue_capacity")).toBe(6);
    expect(metricValue(text, "kvgraft_queue_rejected_total")).toBe(0);
    expect(metricValue(text, "kvgraft_slots", { sized_by: "config" })).toBe(2);
    // Grafts decode in the batch loop (a lone greedy step natively, on the engine build), and every
    // step is counted by its batch size.
    const steps =
      metricValue(text, "kvgraft_decode_steps_total", { path: "batched" }) +
      metricValue(text, "kvgraft_decode_steps_total", { path: "native" });
    expect(steps).toBeGreaterThan(0);
    expect(metricValue(text, "kvgraft_decode_batch_steps_total")).toBe(steps);
    expect(metricValue(text, "kvgraft_decode_steps_total", { path: "library" })).toBeGreaterThan(0);
    // A batched step is at least one forward pass (llama.cpp's split, estimated).
    expect(metricValue(text, "kvgraft_decode_passes_total")).toBeGreaterThanOrEqual(
      metricValue(text, "kvgraft_decode_steps_total", { path: "batched" }),
    );
    // Those steps' wall time by phase: the decode took some; every path and phase is exposed.
    expect(metricValue(text, "kvgraft_decode_phase_seconds_total", { phase: "decode" })).toBeGreaterThan(0);
    for (const path of ["batched", "native"])
      for (const phase of ["gap", "lock", "prepare", "decode", "sample"])
        expect(text).toMatch(
          new RegExp(`^kvgraft_decode_phase_seconds_total\\{path="${path}",phase="${phase}"\\} \\S+$`, "m"),
        );
  });
});

describe("Cloudflare Access", () => {
  const AUD = "kvgraft-test-aud";
  let jwks: { url: string; close: () => Promise<void> };
  let access: GpuApp;
  let accessServer: { url: string; close: () => Promise<void> };
  let privateKey: HonoJsonWebKey;
  let impostorKey: HonoJsonWebKey;

  async function keyPair(kid: string) {
    const pair = await crypto.subtle.generateKey(
      {
        name: "RSASSA-PKCS1-v1_5",
        modulusLength: 2048,
        publicExponent: new Uint8Array([1, 0, 1]),
        hash: "SHA-256",
      },
      true,
      ["sign", "verify"],
    );
    return {
      privateJwk: {
        ...(await crypto.subtle.exportKey("jwk", pair.privateKey)),
        kid,
        alg: "RS256",
      } as HonoJsonWebKey,
      publicJwk: { ...(await crypto.subtle.exportKey("jwk", pair.publicKey)), kid, alg: "RS256", use: "sig" },
    };
  }

  const token = (key: typeof privateKey, claims: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return Jwt.sign({ aud: [AUD], iss: jwks.url, iat: now, exp: now + 300, sub: "edge", ...claims }, key);
  };

  beforeAll(async () => {
    const real = await keyPair("key-1");
    privateKey = real.privateJwk;
    impostorKey = (await keyPair("key-1")).privateJwk;
    const keysApp = new Hono();
    keysApp.get("/cdn-cgi/access/certs", (c) => c.json({ keys: [real.publicJwk] }));
    jwks = await listen(keysApp as unknown as GpuApp["app"]);
    access = createGpuApp(appOptions({ access: { audience: AUD, teamDomain: jwks.url } }));
    accessServer = await listen(access.app);
  });

  afterAll(async () => {
    await accessServer?.close();
    await jwks?.close();
  });

  const call = (jwt?: string) =>
    rawSigned(accessServer.url, {
      path: gpuPaths.blocks,
      headers: jwt === undefined ? {} : { "cf-access-jwt-assertion": jwt },
    });

  it("needs a valid Access token for this audience and team besides the signature", async () => {
    expect((await fetch(`${accessServer.url}/health`)).status).toBe(200);
    const ok = await call(await token(privateKey));
    expect(ok.status).toBe(200);

    const now = Math.floor(Date.now() / 1000);
    const cases: [string, string | undefined][] = [
      ["access_token_missing", undefined],
      ["access_token_invalid", "not.a.jwt"],
      ["access_token_invalid", await token(privateKey, { aud: ["another-app"] })],
      ["access_token_invalid", await token(privateKey, { iss: "https://evil.cloudflareaccess.com" })],
      ["access_token_invalid", await token(privateKey, { exp: now - 10 })],
      ["access_token_invalid", await token(impostorKey)],
    ];
    for (const [code, jwt] of cases) {
      const res = await call(jwt);
      expect(res.status, code).toBe(401);
      expect(await errorCode(res)).toBe(code);
    }
    // A valid token does not replace the signature.
    const unsigned = await fetch(`${accessServer.url}${gpuPaths.blocks}`, {
      headers: { "cf-access-jwt-assertion": await token(privateKey) },
    });
    expect(unsigned.status).toBe(401);
    expect(await errorCode(unsigned)).toBe("signature_missing");
  });

  it("answers 503 while the team's keys cannot be fetched", async () => {
    const closed = await listen(new Hono() as unknown as GpuApp["app"]);
    await closed.close();
    const orphan = createGpuApp(appOptions({ access: { audience: AUD, teamDomain: closed.url } }));
    const res = await orphan.app.request(gpuPaths.blocks, {
      headers: { "cf-access-jwt-assertion": await token(privateKey) },
    });
    expect(res.status).toBe(503);
    expect(await errorCode(res)).toBe("access_keys_unavailable");
  });
});
