/**
 * GETs of bulk bodies (a block's state from the bucket) over keep-alive HTTP/1.1 connections
 * whose bytes the kernel reads straight into a few reused slabs (net's `onread`), handed to the
 * caller a slab at a time (`http-connection.ts`). node:http allocates a buffer for every socket
 * read and runs each through its parser and a stream, on the thread that also has to store and
 * account for the bytes: on the H200's host, 313 MiB from s3rver on loopback in 8 MiB GETs came
 * in at 1.22-1.24 GB/s through node:http and 1.70-1.71 GB/s through these connections
 * (bench/bucket-receive.ts; docs/deploy-r2.md has a noisier run too). Only what a ranged GET needs
 * is spoken: one request at a time per connection, a body delimited by Content-Length (S3 and R2
 * send one with every object GET; an answer without one is refused), http: and https:.
 */
import { BulkConnection, type BulkResponse } from "./http-connection.js";

/** Idle connections are closed after this long (under the usual 5 s keep-alive of servers). */
const IDLE_MS = 4_000;

/** A pool of keep-alive connections to one origin for bulk GETs. */
export class BulkHttpClient {
  private readonly idle: BulkConnection[] = [];

  /**
   * Sends a GET of `url` with `headers` (a signed request's; no body) and resolves once the
   * response's head is in. A request that fails on a reused connection before any byte of its
   * answer (the server closed it while idle) is sent once more on a new one.
   */
  async get(url: URL, headers: Headers, signal: AbortSignal): Promise<BulkResponse> {
    const head = requestHead(url, headers);
    for (;;) {
      const reused = this.take(url);
      const connection = reused ?? (await BulkConnection.open(url, signal));
      try {
        return await connection.request(head, signal, (c) => this.release(c));
      } catch (err) {
        if (!reused || connection.answered || signal.aborted) throw err;
      }
    }
  }

  /** Closes the idle connections. */
  close(): void {
    for (const c of this.idle.splice(0)) c.destroy();
  }

  private take(url: URL): BulkConnection | null {
    for (let c = this.idle.pop(); c; c = this.idle.pop()) {
      if (c.origin === url.origin && c.reusable) {
        c.wake();
        return c;
      }
      c.destroy();
    }
    return null;
  }

  private release(connection: BulkConnection): void {
    if (!connection.reusable) {
      connection.destroy();
      return;
    }
    this.idle.push(connection);
    connection.sleep(IDLE_MS, () => {
      const at = this.idle.indexOf(connection);
      if (at >= 0) this.idle.splice(at, 1);
      connection.destroy();
    });
  }
}

/** The request's bytes: GET of the URL's path and query with `headers` (host from the URL). */
function requestHead(url: URL, headers: Headers): string {
  let head = `GET ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  for (const [name, value] of headers) {
    if (name === "host") continue;
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) throw new Error(`header ${name} holds a line break`);
    head += `${name}: ${value}\r\n`;
  }
  return `${head}\r\n`;
}
