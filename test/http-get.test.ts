/**
 * BulkHttpClient (the bucket fetch's GETs) against real servers on loopback: node:http for
 * well-formed answers and TLS, raw sockets for the broken ones. Bodies of every size over one
 * kept-alive connection, views that stay intact while held (the slabs are reused only after),
 * a request sent again when the server had closed an idle connection, and refusals: no
 * Content-Length, a body cut short or overlong, an abort, a failed write, an untrusted certificate.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SLAB_BYTES } from "../gpu-node/blocks/bucket/http/http-connection.js";
import { BulkHttpClient } from "../gpu-node/blocks/bucket/http/http-get.js";

const ROOT = join(import.meta.dirname, "..");
const TLS_DIR = join(ROOT, "test", "fixtures", "tls");

/** Deterministic bytes that differ from slab to slab (a misplaced or reused slab shows). */
function body(n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + (i >>> 11)) & 0xff;
  return b;
}

const serveBytes = (req: IncomingMessage, res: ServerResponse) => {
  const url = new URL(req.url ?? "/", "http://x");
  if (url.pathname === "/chunked") {
    res.write("abc");
    res.end("def");
    return;
  }
  const bytes = body(Number(url.searchParams.get("n")));
  res.writeHead(200, { "content-length": bytes.length, "content-type": "application/octet-stream" });
  res.end(bytes);
};

async function listen(server: Server | NetServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** A GET of `url` read whole (each view copied as it comes). */
async function getAll(client: BulkHttpClient, url: string, signal = new AbortController().signal) {
  const res = await client.get(new URL(url), new Headers({ "x-test": "1" }), signal);
  const views: Buffer[] = [];
  await res.consume((view) => {
    views.push(Buffer.from(view));
  });
  return { status: res.status, bytes: Buffer.concat(views) };
}

/** A raw server: `answer(socket, index)` runs for each request line seen on each connection. */
async function rawServer(answer: (socket: Socket, connection: number, request: number) => void) {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    const connection = connections++;
    let requests = 0;
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("data", (data) => {
      for (const _ of data.toString("latin1").matchAll(/\r\n\r\n/g)) answer(socket, connection, requests++);
    });
  });
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}/x`,
    connections: () => connections,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

describe("BulkHttpClient", () => {
  let server: Server;
  let base = "";
  let connections = 0;
  beforeAll(async () => {
    server = createServer(serveBytes);
    server.on("connection", () => connections++);
    base = `http://127.0.0.1:${await listen(server)}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it("reads bodies of every size over one kept-alive connection, byte-exact", async () => {
    const client = new BulkHttpClient();
    const before = connections;
    // A body read whole with its head, then one over several slabs: the next head must not land in a slab.
    for (const n of [0, 99, 16 * 1024 + 1, 3 * SLAB_BYTES + 7, 99, 2 * SLAB_BYTES, 1]) {
      const { status, bytes } = await getAll(client, `${base}/b?n=${n}`);
      expect(status).toBe(200);
      expect(bytes.equals(body(n))).toBe(true);
    }
    expect(connections - before).toBe(1);
    client.close();
  });

  it("keeps every view intact until its promise settles, reading ahead into the free slabs only", async () => {
    const client = new BulkHttpClient();
    const n = 6 * SLAB_BYTES + 123;
    const expected = body(n);
    const res = await client.get(new URL(`${base}/b?n=${n}`), new Headers(), new AbortController().signal);
    let offset = 0;
    let held = 0;
    let mostHeld = 0;
    let damaged = 0;
    await res.consume((view) => {
      const at = offset;
      offset += view.length;
      held++;
      mostHeld = Math.max(mostHeld, held);
      return new Promise<void>((resolve) =>
        setTimeout(() => {
          if (!view.equals(expected.subarray(at, at + view.length))) damaged++;
          held--;
          resolve();
        }, 3),
      );
    });
    expect(offset).toBe(n);
    expect(damaged).toBe(0);
    expect(mostHeld).toBeGreaterThanOrEqual(2);
    expect(mostHeld).toBeLessThanOrEqual(4);
    client.close();
  });

  it("sends a request again on a new connection when the server had closed the idle one", async () => {
    // The first connection answers one request, then closes on the next without a byte.
    const raw = await rawServer((socket, connection, request) => {
      if (connection === 0 && request === 1) return void socket.destroy();
      socket.write("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello");
    });
    const client = new BulkHttpClient();
    expect((await getAll(client, raw.url)).bytes.toString()).toBe("hello");
    expect((await getAll(client, raw.url)).bytes.toString()).toBe("hello");
    expect(raw.connections()).toBe(2);
    client.close();
    raw.close();
  });

  it("refuses an answer without a Content-Length", async () => {
    const client = new BulkHttpClient();
    await expect(getAll(client, `${base}/chunked`)).rejects.toThrow(/no Content-Length/);
  });

  it.each([
    ["cut short", `content-length: 100000\r\n\r\n${"x".repeat(5000)}`, /closed/],
    ["overlong", `content-length: 10\r\n\r\n${"y".repeat(20)}`, /more than the body's Content-Length/],
    ["not HTTP", "", /not an HTTP\/1\.x answer/],
  ])("refuses a body %s", async (label, rest, error) => {
    const raw = await rawServer((socket) => {
      if (label === "not HTTP") socket.end("SSH-2.0-nope\r\n\r\n");
      else socket.end(`HTTP/1.1 200 OK\r\n${rest}`);
    });
    await expect(getAll(new BulkHttpClient(), raw.url)).rejects.toThrow(error);
    raw.close();
  });

  it("stops at an abort (mid-body or before it) and at a failed write (as it is), and reuses none of those connections", async () => {
    const client = new BulkHttpClient();
    const before = connections;
    const abort = new AbortController();
    const res = await client.get(new URL(`${base}/b?n=${4 * SLAB_BYTES}`), new Headers(), abort.signal);
    await expect(
      res.consume(() => {
        abort.abort(new Error("stop here"));
      }),
    ).rejects.toThrow("stop here");
    // Aborted between the head and the body.
    const early = new AbortController();
    const held = await client.get(new URL(`${base}/b?n=${4 * SLAB_BYTES}`), new Headers(), early.signal);
    early.abort(new Error("not now"));
    await expect(held.consume(() => undefined)).rejects.toThrow("not now");
    const diskFull = new Error("disk full");
    const second = await client.get(
      new URL(`${base}/b?n=${4 * SLAB_BYTES}`),
      new Headers(),
      new AbortController().signal,
    );
    await expect(second.consume(() => Promise.reject(diskFull))).rejects.toBe(diskFull);
    expect((await getAll(client, `${base}/b?n=10`)).bytes.equals(body(10))).toBe(true);
    expect(connections - before).toBe(4);
    client.close();
  });

  it("speaks https with a trusted certificate, and refuses an untrusted one", async () => {
    const https = createHttpsServer(
      { key: readFileSync(join(TLS_DIR, "key.pem")), cert: readFileSync(join(TLS_DIR, "cert.pem")) },
      serveBytes,
    );
    let tlsConnections = 0;
    https.on("secureConnection", () => tlsConnections++);
    const port = await listen(https);
    const n = 2 * SLAB_BYTES + 5;
    const url = `https://127.0.0.1:${port}/b?n=${n}`;
    try {
      // This process does not trust the test certificate: refused.
      await expect(getAll(new BulkHttpClient(), url)).rejects.toThrow(/self[- ]signed|certificate/i);
      // Asynchronously: the server answers from this process.
      const child = await promisify(execFile)(
        process.execPath,
        ["--import", "tsx", join(ROOT, "test", "helpers", "bulk-get-child.ts"), url],
        { cwd: ROOT, env: { ...process.env, NODE_EXTRA_CA_CERTS: join(TLS_DIR, "cert.pem") } },
      );
      expect(child.stderr).toBe("");
      const sha = createHash("sha256").update(body(n)).digest("hex");
      expect(JSON.parse(child.stdout)).toEqual([
        { status: 200, sha256: sha, bytes: n },
        { status: 200, sha256: sha, bytes: n },
      ]);
      // The refused handshake never completed; the child's two GETs shared one connection.
      expect(tlsConnections).toBe(1);
    } finally {
      https.closeAllConnections();
      https.close();
    }
  });
});
