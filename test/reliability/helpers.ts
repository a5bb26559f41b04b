/**
 * Shared pieces of the reliability suite: `kvgraft serve gpu` as a real child process, a real
 * loopback TCP proxy that can delay or black-hole traffic, and raw HTTP/1.1 over `node:net`
 * for requests no well-behaved client would send.
 */
import type { ChildProcess } from "node:child_process";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { createGpuClient, type GpuNodeClient } from "../../shared/gpu-client.js";
import { kvgraftSourceArgs, readyUrl, supervise } from "../../tools/process/supervise.js";

export const root = join(import.meta.dirname, "..", "..");

export interface GpuChild {
  child: ChildProcess;
  url: string;
  port: number;
  client: GpuNodeClient;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface GpuChildOptions {
  modelPath: string;
  dataDir: string;
  secret: string;
  port?: number;
  extra?: string[];
  env?: Record<string, string>;
  timeoutMs?: number;
  /** Run the Python sandbox (default off). */
  sandbox?: boolean;
}

/** Starts `kvgraft serve gpu --json` and resolves once it printed its ready line. */
export async function startGpuChild(o: GpuChildOptions): Promise<GpuChild> {
  const node = supervise({
    name: "serve gpu",
    args: kvgraftSourceArgs(
      ...["serve", "gpu", "--model", o.modelPath, "--port", String(o.port ?? 0), "--data-dir", o.dataDir],
      ...["--context", "1024", ...(o.sandbox ? [] : ["--no-sandbox"]), "--json", ...(o.extra ?? [])],
    ),
    cwd: root,
    env: { ...process.env, KVGRAFT_GPU_SECRET: o.secret, ...o.env },
    ready: readyUrl,
    readyTimeoutMs: o.timeoutMs ?? 120_000,
  });
  const url = await node.ready;
  return {
    child: node.child,
    url,
    port: Number(new URL(url).port),
    client: createGpuClient({ baseUrl: url, secret: o.secret, timeoutMs: 120_000 }),
    stderr: node.stderr,
    exited: node.exited,
  };
}

/** SIGKILLs a child (if still running) and waits for it to be gone. */
export async function killHard(node: GpuChild): Promise<void> {
  if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill("SIGKILL");
  await node.exited;
}

/** How the proxy treats new traffic. */
export type ProxyMode =
  | { kind: "pass" }
  /** Forwards each piece of data after `ms`. */
  | { kind: "delay"; ms: number }
  /** Accepts connections and reads, but forwards nothing and answers nothing. */
  | { kind: "blackhole" }
  /** Accepts, then resets at once. */
  | { kind: "reset" };

export interface TcpProxy {
  url: string;
  port: number;
  /** Where connections go; can be changed (a restarted node on another port). */
  target: { host: string; port: number };
  mode: ProxyMode;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Destroys every open connection (both sides). */
  dropAll(): void;
  close(): Promise<void>;
}

/** A real TCP proxy on loopback; its behaviour is switched with `mode`. */
export async function tcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const state: TcpProxy = {
    url: "",
    port: 0,
    target,
    mode: { kind: "pass" },
    get accepted() {
      return accepted;
    },
    dropAll() {
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        state.dropAll();
        server.close(() => resolve());
      }),
  };
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => undefined);
  };
  const server: Server = createServer((client) => {
    accepted++;
    track(client);
    const mode = state.mode;
    if (mode.kind === "reset") {
      client.resetAndDestroy();
      return;
    }
    if (mode.kind === "blackhole") {
      client.resume();
      return;
    }
    const upstream = createConnection(state.target);
    track(upstream);
    const forward = (from: Socket, to: Socket) => {
      from.on("data", (d: Buffer) => {
        const m = state.mode;
        if (m.kind === "delay") setTimeout(() => to.destroyed || to.write(d), m.ms);
        else if (m.kind === "blackhole") return;
        else if (!to.destroyed) to.write(d);
      });
      from.on("end", () => {
        const m = state.mode;
        const ms = m.kind === "delay" ? m.ms : 0;
        setTimeout(() => to.destroyed || to.end(), ms);
      });
      from.on("close", () => {
        const m = state.mode;
        setTimeout(() => to.destroy(), m.kind === "delay" ? m.ms + 10 : 0);
      });
    };
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  state.port = port;
  state.url = `http://127.0.0.1:${port}`;
  return state;
}

/** A parsed HTTP/1.1 response read off a raw socket. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Writes `payload` on one raw connection and collects every response the server sends before
 * it closes the connection (or `idleMs` passes without data). Pipelined requests give several.
 */
export function rawExchange(
  url: string,
  payload: string | Buffer,
  idleMs = 1_500,
): Promise<{ responses: RawResponse[]; raw: string; closed: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    let closed = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const raw = Buffer.concat(chunks).toString("latin1");
      resolve({ responses: parseResponses(raw), raw, closed });
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(finish, idleMs);
    };
    socket.on("connect", () => {
      socket.write(payload);
      arm();
    });
    socket.on("data", (d: Buffer) => {
      chunks.push(d);
      arm();
    });
    socket.on("end", () => {
      closed = true;
      finish();
    });
    socket.on("close", () => {
      closed = true;
      finish();
    });
    socket.on("error", (err: NodeJS.ErrnoException) => {
      // A reset after the server answered is a close.
      if (chunks.length > 0 || err.code === "ECONNRESET" || err.code === "EPIPE") {
        closed = true;
        finish();
      } else reject(err);
    });
  });
}

/** Splits a byte stream into HTTP/1.1 responses (Content-Length or chunked bodies). */
export function parseResponses(raw: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = raw;
  while (rest.startsWith("HTTP/1.")) {
    const headEnd = rest.indexOf("\r\n\r\n");
    if (headEnd < 0) break;
    const [statusLine, ...lines] = rest.slice(0, headEnd).split("\r\n");
    const status = Number(statusLine?.split(" ")[1]);
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(":");
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    rest = rest.slice(headEnd + 4);
    let body = "";
    if (headers["transfer-encoding"]?.includes("chunked")) {
      for (;;) {
        const lineEnd = rest.indexOf("\r\n");
        if (lineEnd < 0) break;
        const size = Number.parseInt(rest.slice(0, lineEnd), 16);
        rest = rest.slice(lineEnd + 2);
        if (!size) {
          rest = rest.slice(rest.indexOf("\r\n") + 2);
          break;
        }
        body += rest.slice(0, size);
        rest = rest.slice(size + 2);
      }
    } else {
      const len = Number(headers["content-length"] ?? 0);
      body = rest.slice(0, len);
      rest = rest.slice(len);
    }
    out.push({ status, headers, body });
  }
  return out;
}

/** Resolves once `check` holds, polling every 25 ms; throws after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what = "condition") {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
