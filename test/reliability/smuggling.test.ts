/**
 * Request smuggling shapes sent with raw sockets (`node:net`) to both servers: the edge (Node
 * entry, in-process) and the GPU node (`kvgraft serve gpu`, a child process). Each case writes
 * one connection's bytes: an ambiguous or oversized request followed by a second pipelined
 * request hidden in (or after) its body. The server must refuse the first with a 4xx and must
 * never answer the hidden one: a response to it would mean the two ends disagree on where the
 * body ended (desync). A control case shows that honest pipelined requests are all answered,
 * so "no second response" is not vacuous.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeServer, startEdgeServer } from "../../edge/runtime/node.js";
import { silentLogger } from "../../shared/http/logger.js";
import { signRequest } from "../../shared/signing.js";
import { syntheticModel } from "../helpers/models.js";
import { type GpuChild, killHard, type RawResponse, rawExchange, startGpuChild } from "./helpers.js";

const SECRET = "smuggling-secret-0123456789";
const temp = mkdtempSync(join(tmpdir(), "kvgraft-rel-smuggle-"));
let edge: EdgeServer;
let gpu: GpuChild;
let key: string;

beforeAll(async () => {
  [edge, gpu] = await Promise.all([
    startEdgeServer({
      env: { LIBSQL_URL: `file:${join(temp, "edge.db")}`, KVGRAFT_MAX_BODY_BYTES: "4096" },
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger,
    }),
    startGpuChild({ modelPath: syntheticModel("tiny-llama"), dataDir: join(temp, "gpu"), secret: SECRET }),
  ]);
  key = edge.generatedAdminKey as string;
});

afterAll(async () => {
  await edge?.close();
  if (gpu) await killHard(gpu);
  rmSync(temp, { recursive: true, force: true });
});

/** The hidden request: if it is ever answered, its marker path shows up as a 404 body or a 401. */
const HIDDEN = "GET /smuggled-marker HTTP/1.1\r\nHost: x\r\n\r\n";

function host(url: string) {
  return new URL(url).host;
}

function chunked(body: string, size = 1024): string {
  let out = "";
  for (let i = 0; i < body.length; i += size) {
    const part = body.slice(i, i + size);
    out += `${Buffer.byteLength(part).toString(16)}\r\n${part}\r\n`;
  }
  return `${out}0\r\n\r\n`;
}

/** No response may come from the hidden request (a 404 for /smuggled-marker, or a second answer). */
function expectNoDesync(responses: RawResponse[], raw: string, expectedCount = 1): void {
  expect(responses.length, raw.slice(0, 500)).toBeLessThanOrEqual(expectedCount);
  expect(raw).not.toContain("smuggled-marker");
  for (const r of responses) expect(r.status, raw.slice(0, 300)).not.toBe(404);
}

describe.each([
  ["edge", () => ({ url: edge.url, auth: `Authorization: Bearer ${key}\r\n`, path: "/v1/solve" })],
  ["gpu node", () => ({ url: gpu.url, auth: "", path: "/v1/blocks" })],
])("%s", (_name, target) => {
  it("control: honest pipelined requests on one connection are all answered", async () => {
    const { url } = target();
    const req = `GET /health HTTP/1.1\r\nHost: ${host(url)}\r\n\r\n`;
    const { responses } = await rawExchange(url, req + req + req);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it("Content-Length together with Transfer-Encoding: chunked is refused, the hidden request unanswered", async () => {
    const { url, auth, path } = target();
    const inner = '{"problem":"1+1","mode":"verified"}';
    // CL covers only the first chunk; a CL-reading server would see HIDDEN as the next request,
    // a TE-reading one would see it inside the body.
    const body = `${chunked(inner)}${HIDDEN}`;
    const payload =
      `POST ${path} HTTP/1.1\r\nHost: ${host(url)}\r\n${auth}Content-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(chunked(inner))}\r\nTransfer-Encoding: chunked\r\n\r\n${body}`;
    const { responses, raw, closed } = await rawExchange(url, payload);
    expect(responses[0]?.status, raw.slice(0, 300)).toBe(400);
    expect(closed).toBe(true);
    expectNoDesync(responses, raw);
  });

  it("duplicate, conflicting Content-Length headers are refused", async () => {
    const { url, auth, path } = target();
    const inner = '{"problem":"1+1","mode":"verified"}';
    const payload =
      `POST ${path} HTTP/1.1\r\nHost: ${host(url)}\r\n${auth}Content-Type: application/json\r\n` +
      `Content-Length: ${inner.length}\r\nContent-Length: ${inner.length + HIDDEN.length}\r\n\r\n${inner}${HIDDEN}`;
    const { responses, raw, closed } = await rawExchange(url, payload);
    expect(responses[0]?.status, raw.slice(0, 300)).toBe(400);
    expect(closed).toBe(true);
    expectNoDesync(responses, raw);
  });

  it.each([
    ["Transfer-Encoding: xchunked"],
    ["Transfer-Encoding: chunked, identity"],
    ["Transfer-Encoding : chunked"],
    ["Transfer-Encoding:\tchunked\r\nTransfer-Encoding: identity"],
    [" Transfer-Encoding: chunked"],
  ])("an obfuscated %j is refused or read unambiguously", async (te) => {
    const { url, auth, path } = target();
    const inner = '{"problem":"1+1","mode":"verified"}';
    const payload =
      `POST ${path} HTTP/1.1\r\nHost: ${host(url)}\r\n${auth}Content-Type: application/json\r\n` +
      `Content-Length: ${inner.length}\r\n${te}\r\n\r\n${chunked(inner)}${HIDDEN}`;
    const { responses, raw } = await rawExchange(url, payload);
    expect(responses.length, raw.slice(0, 300)).toBeGreaterThanOrEqual(1);
    expect(responses[0]?.status).toBeGreaterThanOrEqual(400);
    expect(responses[0]?.status).toBeLessThan(500);
    expect(responses[0]?.status).not.toBe(404);
    expectNoDesync(responses, raw);
  });

  it("a chunked body over the limit is a 413 and its contents are never read as a request", async () => {
    const { url, auth, path } = target();
    // The body is a run of complete requests: a server that stopped at the limit and went on
    // parsing would answer them.
    const limit = url === edge.url ? 4096 : 4 * 2 ** 20;
    const filler = HIDDEN.repeat(Math.ceil((limit * 1.5) / HIDDEN.length));
    const signed =
      url === gpu.url
        ? Object.entries(await signRequest({ secret: SECRET, method: "POST", path, body: filler }))
            .map(([k, v]) => `${k}: ${v}\r\n`)
            .join("")
        : "";
    const payload =
      `POST ${path} HTTP/1.1\r\nHost: ${host(url)}\r\n${auth}${signed}Content-Type: application/json\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n${chunked(filler, 64 * 1024)}GET /health HTTP/1.1\r\nHost: x\r\n\r\n`;
    const { responses, raw } = await rawExchange(url, payload, 3_000);
    expect(responses[0]?.status, raw.slice(0, 300)).toBe(413);
    expect(JSON.parse(responses[0]?.body ?? "{}").error.code).toBe("body_too_large");
    // After the 413 the server either closes or, having read the whole body, answers the honest
    // request that follows it (/health, 200); it never answers what was inside the body.
    expectNoDesync(responses, raw, 2);
    if (responses[1]) expect(responses[1].status).toBe(200);
  });

  it("a Content-Length larger than the limit is a 413 without reading the body", async () => {
    const { url, auth, path } = target();
    const size = url === edge.url ? 10_000 : 5 * 2 ** 20;
    const payload =
      `POST ${path} HTTP/1.1\r\nHost: ${host(url)}\r\n${auth}Content-Type: application/json\r\n` +
      `Content-Length: ${size}\r\n\r\n${HIDDEN.repeat(20)}`;
    const { responses, raw } = await rawExchange(url, payload);
    expect(responses[0]?.status, raw.slice(0, 300)).toBe(413);
    expectNoDesync(responses, raw);
  });
});

describe("signed requests to the GPU node, beyond test/gpu-server.test.ts", () => {
  it("a signature made for GET cannot delete: the method is signed", async () => {
    const block = await gpu.client.deposit("Problem: 5 + 5. Answer: 10.");
    const path = `/v1/blocks/${block.sha256}`;
    const headers = await signRequest({ secret: SECRET, method: "GET", path });
    const del = await fetch(`${gpu.url}${path}`, { method: "DELETE", headers });
    expect(del.status).toBe(401);
    expect(((await del.json()) as { error: { code: string } }).error.code).toBe("signature_invalid");
    // The nonce was not burnt by the forgery: the GET it was made for still works once.
    expect((await fetch(`${gpu.url}${path}`, { headers })).status).toBe(200);
    expect((await gpu.client.listBlocks()).some((m) => m.sha256 === block.sha256)).toBe(true);
  });

  it("signature headers sent twice (comma-joined by the parser) are refused, not half-checked", async () => {
    const path = "/v1/blocks";
    const a = await signRequest({ secret: SECRET, method: "GET", path });
    const b = await signRequest({ secret: SECRET, method: "GET", path });
    const lines = [...Object.entries(a), ...Object.entries(b)].map(([k, v]) => `${k}: ${v}\r\n`).join("");
    const { responses, raw } = await rawExchange(gpu.url, `GET ${path} HTTP/1.1\r\nHost: x\r\n${lines}\r\n`);
    expect(responses[0]?.status, raw.slice(0, 300)).toBe(401);
    expect(JSON.parse(responses[0]?.body ?? "{}").error.code).toBe("signature_malformed");
  });
});
