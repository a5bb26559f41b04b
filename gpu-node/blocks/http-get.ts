/**
 * A GET through node:http(s) for bulk bodies (a block's state from the bucket). fetch's web
 * streams copy every received chunk once more and make a promise per read: on the H200 that
 * machinery and the garbage it leaves took more of the main thread than storing the bytes, and
 * a fetch of 313 MiB received at well under the rate the store sent. Here each socket chunk is
 * handed over as it is, and a signed request (aws4fetch) supplies the URL and headers.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

/** A response whose body is consumed chunk by chunk. */
export interface StreamedResponse {
  status: number;
  header(name: string): string | null;
  /**
   * Hands every body chunk to `onData` (in order) and resolves at the end. When `onData` returns
   * a promise the body is paused until it settles. Rejects on a network error, an abort of the
   * request's signal, or a throw from `onData` (the connection is then dropped).
   */
  consume(onData: (bytes: Buffer) => void | Promise<void>): Promise<void>;
  /** Drops the body (and its connection). */
  discard(): void;
}

/** Keep-alive connection pools for one client of a host. */
export interface HttpAgents {
  http: HttpAgent;
  https: HttpsAgent;
}

/** Agents that keep connections open between GETs (one pair per bucket client). */
export function keepAliveAgents(): HttpAgents {
  return { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
}

/** Sends `request` (its method, URL and headers; no body) and resolves once the headers are in. */
export function streamedGet(
  request: Request,
  signal: AbortSignal,
  agents: HttpAgents,
): Promise<StreamedResponse> {
  const url = new URL(request.url);
  const headers = Object.fromEntries(request.headers.entries());
  const https = url.protocol === "https:";
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      url,
      { method: request.method, headers, signal, agent: https ? agents.https : agents.http },
      (res) => resolve(streamed(res, signal)),
    );
    req.on("error", reject);
    req.end();
  });
}

function streamed(res: IncomingMessage, signal: AbortSignal): StreamedResponse {
  return {
    status: res.statusCode ?? 0,
    header: (name) => {
      const value = res.headers[name.toLowerCase()];
      return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
    },
    consume: (onData) =>
      new Promise<void>((resolve, reject) => {
        let failed = false;
        const fail = (err: unknown) => {
          if (failed) return;
          failed = true;
          signal.removeEventListener("abort", onAbort);
          res.destroy();
          reject(err);
        };
        const onAbort = () => fail(signal.reason);
        if (signal.aborted) return fail(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
        res.on("data", (chunk: Buffer) => {
          if (failed) return;
          try {
            const pending = onData(chunk);
            if (pending) {
              res.pause();
              pending.then(() => {
                if (!failed) res.resume();
              }, fail);
            }
          } catch (err) {
            fail(err);
          }
        });
        res.once("error", fail);
        res.once("aborted", () => fail(new Error("the connection closed before the body ended")));
        res.once("end", () => {
          if (failed) return;
          signal.removeEventListener("abort", onAbort);
          // A paused body ends only after it resumed, so every `onData` promise has settled.
          resolve();
        });
        res.once("close", () => {
          if (!res.complete) fail(new Error("the connection closed before the body ended"));
        });
      }),
    discard: () => res.destroy(),
  };
}
