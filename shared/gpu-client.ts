/**
 * A small signed client of the GPU node's API, for the edge, the CLI and tests. Every request is
 * signed (shared/signing.ts) and every response validated with the protocol's schemas. It uses
 * only fetch and Web Crypto, so it runs in Node and in Workers alike.
 */
import type { z } from "zod";
import { DomainError, errorStatus } from "./errors.js";
import { sha256Hex } from "./hash.js";
import type { ProgramParam } from "./params.js";
import {
  BLOCK_MANIFEST_HEADER,
  type BlockManifest,
  blockFilePath,
  blockListSchema,
  blockManifestSchema,
  CHUNK_SHA256_HEADER,
  DEADLINE_HEADER,
  decodeManifestHeader,
  errorBodySchema,
  type GenerateRequest,
  type GenerationResult,
  type GraftRequest,
  generationResultSchema,
  gpuPaths,
  type Health,
  healthSchema,
  importChunkResultSchema,
  importStartResultSchema,
  LIMITS,
  prefetchResultSchema,
  type SolveRequest,
  type SolveResult,
  type StreamEvent,
  sandboxRunResultSchema,
  solveResultSchema,
  streamErrorEventSchema,
  streamTokenEventSchema,
  type Tier,
  verifyBlockResultSchema,
} from "./protocol.js";
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

type SandboxRun = z.infer<typeof sandboxRunResultSchema>;
type VerifyResult = z.infer<typeof verifyBlockResultSchema>;

/** Parses a `text/event-stream` body into events with JSON data. */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ event: string; data: unknown }> {
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += decoder.decode(value, { stream: !done });
      let end = buffer.search(/\r?\n\r?\n/);
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
        let event = "message";
        const data: string[] = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) yield { event, data: JSON.parse(data.join("\n")) };
        end = buffer.search(/\r?\n\r?\n/);
      }
      if (done) return;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** Validates one raw SSE event as a protocol stream event. */
function streamEvent(raw: { event: string; data: unknown }): StreamEvent {
  switch (raw.event) {
    case "token":
      return { event: "token", data: streamTokenEventSchema.parse(raw.data) };
    case "summary":
      return { event: "summary", data: generationResultSchema.parse(raw.data) };
    case "error":
      return { event: "error", data: streamErrorEventSchema.parse(raw.data) };
    default:
      throw new GpuError(502, "gpu_bad_response", `unknown stream event '${raw.event}'`);
  }
}

async function errorFrom(res: Response): Promise<GpuError> {
  const retry = Number(res.headers.get("retry-after"));
  const retryAfterS = Number.isFinite(retry) && retry > 0 ? retry : undefined;
  const parsed = errorBodySchema.safeParse(await res.json().catch(() => null));
  if (!parsed.success)
    return new GpuError(res.status, "gpu_bad_response", `HTTP ${res.status}`, undefined, retryAfterS);
  const { code, message, details } = parsed.data.error;
  return new GpuError(res.status, code, message, details, retryAfterS);
}

async function readSlice(source: ImportSource, offset: number, length: number): Promise<Uint8Array> {
  if (source instanceof Uint8Array) return source.subarray(offset, offset + length);
  if (source instanceof Blob)
    return new Uint8Array(await source.slice(offset, offset + length).arrayBuffer());
  return source.read(offset, length);
}

/** A signed client of one GPU node. */
export function createGpuClient(options: GpuClientOptions) {
  const base = options.baseUrl.replace(/\/+$/, "");
  const doFetch: typeof fetch = options.fetch ?? ((input, init) => fetch(input, init));
  const timeoutMs = options.timeoutMs ?? 120_000;

  /** Sends one signed request; the raw response, whatever its status. */
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

  /** A streamed graft or generation: calls `onToken` per token, resolves to the summary. */
  async function stream(
    path: string,
    body: object,
    opts: CallOptions & { onToken?: (token: number, text: string) => void } = {},
  ): Promise<GenerationResult> {
    for await (const e of events(path, body, opts)) {
      if (e.event === "token") opts.onToken?.(e.data.token, e.data.text);
      else if (e.event === "summary") return e.data;
      else throw new GpuError(e.data.status, e.data.error.code, e.data.error.message, e.data.error.details);
    }
    throw new GpuError(502, "gpu_bad_response", "the stream ended without a summary");
  }

  /** The validated events of a streamed graft or generation. */
  async function* events(path: string, body: object, opts: CallOptions = {}): AsyncGenerator<StreamEvent> {
    const res = await send("POST", path, JSON.stringify({ ...body, stream: true }), {
      headers: opts.deadlineMs !== undefined ? { [DEADLINE_HEADER]: String(opts.deadlineMs) } : {},
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    if (!res.ok) throw await errorFrom(res);
    if (!res.body || !res.headers.get("content-type")?.startsWith("text/event-stream"))
      throw new GpuError(502, "gpu_bad_response", "expected an event stream");
    for await (const raw of readSse(res.body)) yield streamEvent(raw);
  }

  return {
    send,
    health: async (): Promise<Health> => {
      const res = await doFetch(`${base}${gpuPaths.health}`, {
        headers: { ...options.headers },
        signal: AbortSignal.timeout(timeoutMs),
      });
      // A draining node answers 503 with its health body.
      const parsed = healthSchema.safeParse(await res.json().catch(() => null));
      if (parsed.success) return parsed.data;
      throw new GpuError(res.status, "gpu_bad_response", `health: HTTP ${res.status}`);
    },
    /** Prometheus text of the node's metrics. */
    metrics: async (): Promise<string> => {
      const res = await send("GET", gpuPaths.metrics);
      if (!res.ok) throw await errorFrom(res);
      return res.text();
    },
    deposit: (text: string, opts?: CallOptions): Promise<BlockManifest> =>
      call("POST", gpuPaths.blocks, blockManifestSchema, { text }, opts),
    listBlocks: async (): Promise<BlockManifest[]> =>
      (await call("GET", gpuPaths.blocks, blockListSchema)).blocks,
    getBlock: (id: string): Promise<BlockManifest> => call("GET", gpuPaths.block(id), blockManifestSchema),
    deleteBlock: (id: string): Promise<void> => call("DELETE", gpuPaths.block(id), null),
    verifyBlock: (id: string, opts?: CallOptions): Promise<VerifyResult> =>
      call("POST", gpuPaths.verifyBlock(id), verifyBlockResultSchema, {}, opts),
    prefetch: async (id: string, tier: "hot" | "warm" = "hot", opts?: CallOptions): Promise<Tier> =>
      (await call("POST", gpuPaths.prefetch(id), prefetchResultSchema, { tier }, opts)).tier,
    graft: (req: Omit<GraftRequest, "stream">, opts?: CallOptions): Promise<GenerationResult> =>
      call("POST", gpuPaths.graft, generationResultSchema, { ...req, stream: false }, opts),
    generate: (req: Omit<GenerateRequest, "stream">, opts?: CallOptions): Promise<GenerationResult> =>
      call("POST", gpuPaths.generate, generationResultSchema, { ...req, stream: false }, opts),
    /** Streamed graft: tokens as they come, then the same result as `graft`. */
    graftStream: (
      req: Omit<GraftRequest, "stream">,
      opts?: CallOptions & { onToken?: (token: number, text: string) => void },
    ) => stream(gpuPaths.graft, req, opts),
    generateStream: (
      req: Omit<GenerateRequest, "stream">,
      opts?: CallOptions & { onToken?: (token: number, text: string) => void },
    ) => stream(gpuPaths.generate, req, opts),
    /** Raw validated events of a streamed graft or generation. */
    events: (kind: "graft" | "generate", req: object, opts?: CallOptions) =>
      events(kind === "graft" ? gpuPaths.graft : gpuPaths.generate, req, opts),
    /** The sampled solve pipeline (k samples, programs in the sandbox, a vote). */
    solve: (req: SolveRequest, opts?: CallOptions): Promise<SolveResult> =>
      call("POST", gpuPaths.solve, solveResultSchema, req, opts),
    sandboxRun: (req: {
      program: string;
      params?: readonly ProgramParam[];
      expect?: string;
    }): Promise<SandboxRun> => call("POST", gpuPaths.sandboxRun, sandboxRunResultSchema, req),

    /**
     * Uploads a block file in chunks (each with its SHA-256), then commits it; the node checks
     * the whole file against the manifest, its fingerprints and its probe. On any failure the
     * import is aborted so the node keeps nothing.
     */
    importBlock: async (
      manifest: BlockManifest,
      source: ImportSource,
      opts: CallOptions & { chunkBytes?: number } = {},
    ): Promise<BlockManifest> => {
      const sizeBytes = source instanceof Uint8Array ? source.length : source.size;
      const chunkBytes = opts.chunkBytes ?? LIMITS.importChunkBytes;
      const started = await call("POST", gpuPaths.imports, importStartResultSchema, {
        manifest,
        sizeBytes,
        chunkBytes,
      });
      try {
        for (let i = 0; i < started.chunkCount; i++) {
          const bytes = await readSlice(
            source,
            i * chunkBytes,
            Math.min(chunkBytes, sizeBytes - i * chunkBytes),
          );
          const res = await send("PUT", gpuPaths.importChunk(started.importId, i), bytes, {
            headers: { [CHUNK_SHA256_HEADER]: await sha256Hex(bytes) },
            ...(opts.signal ? { signal: opts.signal } : {}),
          });
          if (!res.ok) throw await errorFrom(res);
          importChunkResultSchema.parse(await res.json());
        }
        return await call("POST", gpuPaths.importCommit(started.importId), blockManifestSchema, {}, opts);
      } catch (err) {
        // A commit that ran removed the session itself; this covers failures before it.
        await send("DELETE", gpuPaths.importSession(started.importId)).catch(() => undefined);
        throw err;
      }
    },

    /**
     * Opens a block's state file for reading (signed GET, streamed): its manifest (from the
     * header, checked to be the block asked for) and the body. The caller must consume or cancel
     * `body`.
     */
    openBlockFile: async (
      id: string,
      opts: { signal?: AbortSignal } = {},
    ): Promise<{ manifest: BlockManifest; body: ReadableStream<Uint8Array> }> => {
      const res = await send("GET", blockFilePath(id), undefined, opts.signal ? { signal: opts.signal } : {});
      if (!res.ok) throw await errorFrom(res);
      const header = res.headers.get(BLOCK_MANIFEST_HEADER);
      if (!header || !res.body) {
        await res.body?.cancel();
        throw new GpuError(502, "gpu_bad_response", "block file without a manifest header or body");
      }
      const manifest = decodeManifestHeader(header);
      if (manifest.sha256 !== id) {
        await res.body.cancel();
        throw new GpuError(502, "gpu_bad_response", "the node sent the file of another block");
      }
      return { manifest, body: res.body };
    },

    /**
     * Imports a block from a byte stream of known size (another node's file, say), chunk by
     * chunk as the bytes arrive, so the whole file is never held in memory. The node checks each
     * chunk's SHA-256, then the file's SHA-256, fingerprints and probe at the commit.
     */
    importBlockStream: async (
      manifest: BlockManifest,
      body: ReadableStream<Uint8Array>,
      opts: CallOptions & { chunkBytes?: number } = {},
    ): Promise<BlockManifest> => {
      const sizeBytes = manifest.sizeBytes;
      const chunkBytes = opts.chunkBytes ?? LIMITS.importChunkBytes;
      const reader = body.getReader();
      let importId: string | undefined;
      try {
        const started = await call("POST", gpuPaths.imports, importStartResultSchema, {
          manifest,
          sizeBytes,
          chunkBytes,
        });
        importId = started.importId;
        const buffer = new Uint8Array(chunkBytes);
        let filled = 0;
        let index = 0;
        let total = 0;
        const flush = async () => {
          const bytes = buffer.slice(0, filled);
          const res = await send("PUT", gpuPaths.importChunk(started.importId, index), bytes, {
            headers: { [CHUNK_SHA256_HEADER]: await sha256Hex(bytes) },
            ...(opts.signal ? { signal: opts.signal } : {}),
          });
          if (!res.ok) throw await errorFrom(res);
          importChunkResultSchema.parse(await res.json());
          index++;
          filled = 0;
        };
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          let offset = 0;
          total += value.length;
          if (total > sizeBytes) throw new GpuError(502, "gpu_bad_response", "the block file is too long");
          while (offset < value.length) {
            const n = Math.min(chunkBytes - filled, value.length - offset);
            buffer.set(value.subarray(offset, offset + n), filled);
            filled += n;
            offset += n;
            if (filled === chunkBytes) await flush();
          }
        }
        if (filled > 0) await flush();
        if (total !== sizeBytes)
          throw new GpuError(
            502,
            "gpu_bad_response",
            `the block file ended at ${total} of ${sizeBytes} bytes`,
          );
        const committed = await call(
          "POST",
          gpuPaths.importCommit(started.importId),
          blockManifestSchema,
          {},
          opts,
        );
        importId = undefined;
        return committed;
      } catch (err) {
        await reader.cancel().catch(() => undefined);
        if (importId) await send("DELETE", gpuPaths.importSession(importId)).catch(() => undefined);
        throw err;
      }
    },
  };
}

/** The client's type, for dependency injection. */
export type GpuNodeClient = ReturnType<typeof createGpuClient>;
