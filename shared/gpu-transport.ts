/**
 * The signed transport of the GPU client (shared/gpu-client.ts): every request signed
 * (shared/signing.ts), JSON answers validated with the protocol's schemas, and non-2xx answers
 * turned into a GpuError carrying the node's code. Only fetch and Web Crypto, so it runs in Node
 * and in Workers alike.
 */
import type { z } from "zod";
import { DomainError, errorStatus } from "./errors.js";
import { DEADLINE_HEADER, errorBodySchema } from "./protocol.js";
import { signRequest } from "./signing.js";

/**
 * A non-2xx answer of the node (or an `error` event of a stream), with the node's error code: a
 * DomainError whose class says it came from the GPU node, so callers can tell the node's refusals
 * from their own. A status outside 4xx/5xx is reported as 502.
 */
export class GpuError extends DomainError {
  override name = "GpuError";
  constructor(
    status: number,
    code: string,
    message: string,
    details?: Record<string, unknown>,
    retryAfterS?: number,
  ) {
    super(errorStatus(status), code, message, details, retryAfterS);
  }
}

export interface GpuClientOptions {
  baseUrl: string;
  secret: string;
  /** Timeout of each request (a stream: until its last event); default 120 s. */
  timeoutMs?: number;
  /** Extra headers on every request (a Cloudflare Access service token, say). */
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

/** Per-call options of model work. */
export interface CallOptions {
  /** Sent as `x-kvgraft-deadline-ms`: the node stops the work after this long. */
  deadlineMs?: number;
  signal?: AbortSignal;
}

/** Bytes of a block file to import: in memory, a Blob (Node: `fs.openAsBlob`), or a reader. */
export type ImportSource =
  | Uint8Array
  | Blob
  | { size: number; read(offset: number, length: number): Promise<Uint8Array> };

/** The GpuError of a non-2xx answer, with the node's code when its body has one. */
export async function errorFrom(res: Response): Promise<GpuError> {
  const retry = Number(res.headers.get("retry-after"));
  const retryAfterS = Number.isFinite(retry) && retry > 0 ? retry : undefined;
  const parsed = errorBodySchema.safeParse(await res.json().catch(() => null));
  if (!parsed.success)
    return new GpuError(res.status, "gpu_bad_response", `HTTP ${res.status}`, undefined, retryAfterS);
  const { code, message, details } = parsed.data.error;
  return new GpuError(res.status, code, message, details, retryAfterS);
}

/** Signed requests to one node: the raw `send` and the validated `call`. */
export interface GpuTransport {
  /** Sends one signed request; the raw response, whatever its status. */
  send(
    method: string,
    path: string,
    body?: string | Uint8Array,
    init?: { headers?: Record<string, string>; signal?: AbortSignal },
  ): Promise<Response>;
  /** Sends a JSON request and validates the answer with `schema` (null: no body); non-2xx throws a GpuError. */
  call<T>(
    method: string,
    path: string,
    schema: z.ZodType<T> | null,
    body?: unknown,
    opts?: CallOptions,
  ): Promise<T>;
}

/** The signed transport of a client. */
export function gpuTransport(options: GpuClientOptions): GpuTransport {
  const base = options.baseUrl.replace(/\/+$/, "");
  const doFetch: typeof fetch = options.fetch ?? ((input, init) => fetch(input, init));
  const timeoutMs = options.timeoutMs ?? 120_000;

  async function send(
    method: string,
    path: string,
    body?: string | Uint8Array,
    init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const signature = await signRequest({
      secret: options.secret,
      method,
      path,
      ...(body !== undefined ? { body } : {}),
    });
    const timeout = AbortSignal.timeout(timeoutMs);
    return doFetch(`${base}${path}`, {
      method,
      headers: {
        ...options.headers,
        ...(typeof body === "string" ? { "content-type": "application/json" } : {}),
        ...(body instanceof Uint8Array ? { "content-type": "application/octet-stream" } : {}),
        ...signature,
        ...init.headers,
      },
      ...(body !== undefined ? { body: body as string | Uint8Array<ArrayBuffer> } : {}),
      signal: init.signal ? AbortSignal.any([timeout, init.signal]) : timeout,
    });
  }

  async function call<T>(
    method: string,
    path: string,
    schema: z.ZodType<T> | null,
    body?: unknown,
    call: CallOptions = {},
  ): Promise<T> {
    const res = await send(method, path, body === undefined ? undefined : JSON.stringify(body), {
      headers: call.deadlineMs !== undefined ? { [DEADLINE_HEADER]: String(call.deadlineMs) } : {},
      ...(call.signal ? { signal: call.signal } : {}),
    });
    if (!res.ok) throw await errorFrom(res);
    if (schema === null) {
      await res.body?.cancel();
      return undefined as T;
    }
    return schema.parse(await res.json());
  }

  return { send, call };
}
