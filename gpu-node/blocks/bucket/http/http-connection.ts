/**
 * One keep-alive HTTP/1.1 connection of `BulkHttpClient` (http-get.ts): the kernel reads a
 * response's head into a small buffer and its body straight into a few reused slabs (net's
 * `onread`), handed to the caller a slab at a time; no buffer is allocated per read and no
 * parser or stream sits between the socket and the caller.
 */
import { isIP, connect as netConnect, type OnReadOpts, type Socket } from "node:net";
import { type ConnectionOptions, connect as tlsConnect } from "node:tls";

/** A response whose body is consumed a slab at a time. */
export interface BulkResponse {
  status: number;
  /** A header's value (repeated headers joined with ", "), or null. */
  header(name: string): string | null;
  /** The body's length from Content-Length. */
  readonly bodyBytes: number;
  /**
   * Hands the body to `onBytes` in order, a view of up to `SLAB_BYTES` at a time, and resolves
   * once it all came and every promise `onBytes` returned settled. A view stays valid until the
   * promise `onBytes` returned for it settles (or until it returns, when it returns none): the
   * slab is then read into again. Rejects on a network error, an abort, a body cut short, or
   * a throw or rejection of `onBytes` (as it is; the connection is then closed).
   */
  consume(onBytes: (bytes: Buffer) => void | Promise<void>): Promise<void>;
  /** Drops the body and its connection. */
  discard(): void;
}

/** Bytes of one slab: what one `onBytes` call gets at most. */
export const SLAB_BYTES = 2 ** 20;
/** Slabs per connection: how many handed-out views may be in use while the next one fills. */
const SLABS = 4;
/** A slab with less room left than this is handed over rather than read into. */
const MIN_READ_ROOM = 64 * 1024;
/** Largest response head accepted. */
const HEAD_BYTES = 16 * 1024;
type Phase = "idle" | "head" | "held" | "body";

/** One keep-alive connection: its socket reads into `headBuffer` for a head, into the slabs for a body. */
export class BulkConnection {
  reusable = true;
  private phase: Phase = "idle";
  private readonly headBuffer = Buffer.allocUnsafe(HEAD_BYTES);
  private headFill = 0;
  /** The slabs, one after another. */
  private readonly slabMemory = Buffer.allocUnsafeSlow(SLABS * SLAB_BYTES);
  /** Per slab: its view is in the caller's hands until this settles. */
  private readonly inUse: (Promise<void> | null)[] = new Array(SLABS).fill(null);
  private slab = 0;
  /** Bytes in the current slab not yet handed over. */
  private fill = 0;
  /** Body bytes not yet read. */
  private remaining = 0;
  private onBytes: ((bytes: Buffer) => void | Promise<void>) | null = null;
  /** Settles the phase in progress (the head's promise, then the body's). */
  private settle: { resolve: () => void; reject: (err: unknown) => void } | null = null;
  /** Whether any byte of the current answer arrived (a connection the server closed sees none). */
  answered = false;
  private idleTimer: NodeJS.Timeout | null = null;
  private failure: unknown = null;
  /** The answer's status and headers, once its head is in. */
  private status = 0;
  private headers = new Map<string, string>();

  private constructor(
    readonly origin: string,
    private readonly socket: Socket,
  ) {
    socket.on("error", (err) => this.fail(err));
    socket.on("close", () => this.fail(new Error("the connection closed")));
  }

  /** Connects (TLS for https:), reading into this connection's buffers. */
  static open(url: URL, signal: AbortSignal): Promise<BulkConnection> {
    const https = url.protocol === "https:";
    if (!https && url.protocol !== "http:") throw new Error(`unsupported protocol ${url.protocol}`);
    const port = Number(url.port) || (https ? 443 : 80);
    const host = url.hostname.replace(/^\[|\]$/g, "");
    let connection: BulkConnection | null = null;
    // The first buffer is asked for before the connection exists; its bytes are copied over.
    const onread: OnReadOpts = {
      buffer: () => connection?.nextBuffer() ?? Buffer.allocUnsafe(HEAD_BYTES),
      callback: (bytes, buffer) => connection?.received(bytes, buffer) ?? false,
    };
    const tlsOptions: ConnectionOptions & { onread: OnReadOpts } = {
      host,
      port,
      ALPNProtocols: ["http/1.1"],
      onread,
      ...(isIP(host) ? {} : { servername: host }),
    };
    const socket = https ? tlsConnect(tlsOptions) : netConnect({ host, port, onread });
    socket.setNoDelay(true);
    connection = new BulkConnection(url.origin, socket);
    const opened = connection;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        opened.destroy();
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      socket.once(https ? "secureConnect" : "connect", () => {
        signal.removeEventListener("abort", onAbort);
        resolve(opened);
      });
      socket.once("error", (err) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      });
    });
  }

  /** Sends one request; resolves with its response once the head is in. */
  request(head: string, signal: AbortSignal, done: (c: BulkConnection) => void): Promise<BulkResponse> {
    if (this.phase !== "idle") throw new Error("a connection serves one request at a time");
    if (this.failure !== null) return Promise.reject(this.failure);
    this.phase = "head";
    this.answered = false;
    const onAbort = () => this.fail(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const ended = () => signal.removeEventListener("abort", onAbort);
    const headIn = new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    if (signal.aborted) onAbort();
    else {
      this.socket.resume(); // paused when the last body was all read with its head
      this.socket.write(head);
    }
    return headIn.then(
      () => this.response(ended, done),
      (err: unknown) => {
        ended();
        throw err;
      },
    );
  }

  /** Back in use from the pool. */
  wake(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.socket.ref();
  }

  /** Idle in the pool: does not hold the process open, and `expire`s after `ms`. */
  sleep(ms: number, expire: () => void): void {
    this.idleTimer = setTimeout(expire, ms);
    this.idleTimer.unref();
    this.socket.unref();
  }

  destroy(): void {
    this.reusable = false;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.socket.destroy();
  }

  private response(ended: () => void, done: (c: BulkConnection) => void): BulkResponse {
    const headers = this.headers;
    const bodyBytes = this.remaining + this.fill;
    return {
      status: this.status,
      bodyBytes,
      header: (name) => headers.get(name.toLowerCase()) ?? null,
      consume: (onBytes) => {
        if (this.phase !== "held") return Promise.reject(new Error("the body was already consumed"));
        // Aborted, or closed by the server, since the head came: no read will settle the body.
        if (this.failure !== null) {
          ended();
          return Promise.reject(this.failure);
        }
        const body = new Promise<void>((resolve, reject) => {
          this.settle = { resolve, reject };
        });
        this.onBytes = onBytes;
        this.phase = "body";
        if (this.remaining === 0) this.handOver(true);
        else this.socket.resume();
        return body.then(
          () => {
            ended();
            done(this);
          },
          (err: unknown) => {
            ended();
            this.destroy();
            throw err;
          },
        );
      },
      discard: () => {
        ended();
        this.destroy();
      },
    };
  }

  private slabAt(index: number): Buffer {
    return this.slabMemory.subarray(index * SLAB_BYTES, (index + 1) * SLAB_BYTES);
  }

  /** The buffer the socket reads into next (onread asks after every read). */
  private nextBuffer(): Buffer {
    // A body read whole with its head needs no more reads: the next one is the next answer's head.
    const bodyReads = this.phase === "body" || (this.phase === "held" && this.remaining > 0);
    return bodyReads ? this.slabAt(this.slab).subarray(this.fill) : this.headBuffer.subarray(this.headFill);
  }

  /**
   * Takes `bytes` just read into `buffer` (what `nextBuffer` gave, or given before the phase
   * changed: then copied to where the phase reads); false pauses the socket.
   */
  private received(bytes: number, buffer: Uint8Array): boolean {
    this.answered = true;
    if (this.phase === "head") return this.receivedHead(bytes, buffer);
    if (this.phase !== "body") {
      this.fail(new Error("the server sent bytes outside an answer"));
      return false;
    }
    const slab = this.slabAt(this.slab);
    if (buffer.buffer !== slab.buffer || buffer.byteOffset !== slab.byteOffset + this.fill) {
      if (bytes > SLAB_BYTES - this.fill) {
        this.fail(new Error("a read overran its slab"));
        return false;
      }
      slab.set(buffer.subarray(0, bytes), this.fill);
    }
    this.fill += bytes;
    this.remaining -= bytes;
    if (this.remaining < 0) {
      this.fail(new Error("the server sent more than the body's Content-Length"));
      return false;
    }
    if (this.remaining === 0) return this.handOver(true);
    if (SLAB_BYTES - this.fill >= MIN_READ_ROOM) return true;
    return this.handOver(false);
  }

  private receivedHead(bytes: number, buffer: Uint8Array): boolean {
    const into = this.headBuffer;
    if (buffer.buffer !== into.buffer || buffer.byteOffset !== into.byteOffset + this.headFill) {
      if (bytes > HEAD_BYTES - this.headFill) {
        this.fail(new Error(`the response head is over ${HEAD_BYTES} bytes`));
        return false;
      }
      into.set(buffer.subarray(0, bytes), this.headFill);
    }
    this.headFill += bytes;
    const end = this.headBuffer.subarray(0, this.headFill).indexOf("\r\n\r\n");
    if (end < 0) {
      if (this.headFill === HEAD_BYTES) this.fail(new Error(`the response head is over ${HEAD_BYTES} bytes`));
      return this.headFill < HEAD_BYTES;
    }
    try {
      this.parseHead(this.headBuffer.toString("latin1", 0, end));
    } catch (err) {
      this.fail(err);
      return false;
    }
    // Body bytes read with the head go to the first slab (every slab is free between answers).
    const early = this.headFill - end - 4;
    if (early > this.remaining) {
      this.fail(new Error("the server sent more than the body's Content-Length"));
      return false;
    }
    this.headBuffer.copy(this.slabAt(0), 0, end + 4, this.headFill);
    this.headFill = 0;
    this.slab = 0;
    this.fill = early;
    this.remaining -= early;
    this.phase = "held";
    const settle = this.settle;
    this.settle = null;
    settle?.resolve();
    return false; // until the body is consumed
  }

  private parseHead(head: string): void {
    const [statusLine = "", ...lines] = head.split("\r\n");
    const status = /^HTTP\/1\.([01]) (\d{3})/.exec(statusLine);
    if (!status) throw new Error(`not an HTTP/1.x answer: ${JSON.stringify(statusLine.slice(0, 40))}`);
    const headers = new Map<string, string>();
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon <= 0) throw new Error(`a malformed header line: ${JSON.stringify(line.slice(0, 40))}`);
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const before = headers.get(name);
      headers.set(name, before === undefined ? value : `${before}, ${value}`);
    }
    const length = headers.get("content-length");
    if (headers.has("transfer-encoding") || length === undefined || !/^\d+$/.test(length))
      throw new Error("the answer has no Content-Length (a chunked body is not read here)");
    const connection = headers.get("connection")?.toLowerCase() ?? "";
    if (connection.includes("close") || (status[1] === "0" && !connection.includes("keep-alive")))
      this.reusable = false;
    this.status = Number(status[2]);
    this.headers = headers;
    this.remaining = Number(length);
  }

  /**
   * Hands the current slab's bytes to `onBytes`, then moves to the next slab; pauses the socket
   * (returns false) while that one is still in the caller's hands. At the body's end, resolves
   * the body once every handed-out view settled.
   */
  private handOver(last: boolean): boolean {
    const index = this.slab;
    const view = this.slabAt(index).subarray(0, this.fill);
    this.fill = 0;
    let pending: Promise<void> | null = null;
    if (view.length > 0) {
      try {
        const returned = this.onBytes?.(view);
        if (returned) pending = returned;
      } catch (err) {
        this.fail(err);
        return false;
      }
    }
    if (pending) {
      const held = pending.then(
        () => {
          if (this.inUse[index] === held) this.inUse[index] = null;
        },
        (err: unknown) => this.fail(err),
      );
      this.inUse[index] = held;
    }
    if (last) {
      this.phase = "idle";
      this.onBytes = null;
      void Promise.all(this.inUse).then(() => {
        if (this.failure !== null) return; // fail() rejected the body
        const settle = this.settle;
        this.settle = null;
        settle?.resolve();
      });
      return true;
    }
    this.slab = (index + 1) % SLABS;
    const next = this.inUse[this.slab];
    if (!next) return true;
    void next.then(() => {
      if (this.failure === null && this.phase === "body") this.socket.resume();
    });
    return false;
  }

  private fail(err: unknown): void {
    this.reusable = false;
    if (this.failure !== null) return;
    this.failure = err;
    this.socket.destroy();
    const settle = this.settle;
    this.settle = null;
    if (!settle) return;
    // A body's promise waits for the views in the caller's hands, whose memory is reused only
    // after they settle.
    void Promise.allSettled(this.inUse).then(() => settle.reject(err));
  }
}
