/**
 * A small signed client of the GPU node's API, for the edge, the CLI and tests. Every request is
 * signed (shared/signing.ts) and every response validated with the protocol's schemas. It uses
 * only fetch and Web Crypto, so it runs in Node and in Workers alike.
 */
import type { z } from "zod";
import { blockFileCalls } from "./gpu-client-files.js";
import {
  type CallOptions,
  errorFrom,
  type GpuClientOptions,
  GpuError,
  gpuTransport,
} from "./gpu-transport.js";
import {
  type BlockManifest,
  blockListSchema,
  blockManifestSchema,
  DEADLINE_HEADER,
  type DepositResult,
  depositResultSchema,
  type GenerateRequest,
  type GenerationResult,
  type GraftRequest,
  generationResultSchema,
  gpuPaths,
  type Health,
  healthSchema,
  prefetchResultSchema,
  type SandboxRunRequest,
  type SandboxRunResult,
  type StreamEvent,
  sandboxRunResultSchema,
  streamErrorEventSchema,
  streamTokenEventSchema,
  type Tier,
  verifyBlockResultSchema,
} from "./protocol.js";
import { type SolveRequest, type SolveResult, solveResultSchema } from "./solve-protocol.js";

/** The node's refusals, as thrown by the client. */
export { GpuError } from "./gpu-transport.js";

type VerifyResult = z.infer<typeof verifyBlockResultSchema>;

/** Options of a streamed call: `onToken` sees each token as it comes; aborting `signal` ends the work. */
export type StreamOptions = CallOptions & { onToken?: (token: number, text: string) => void };

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
    case "solved":
      return { event: "solved", data: solveResultSchema.parse(raw.data) };
    case "error":
      return { event: "error", data: streamErrorEventSchema.parse(raw.data) };
    default:
      throw new GpuError(502, "gpu_bad_response", `unknown stream event '${raw.event}'`);
  }
}

/** A signed client of one GPU node. */
export function createGpuClient(options: GpuClientOptions) {
  const base = options.baseUrl.replace(/\/+$/, "");
  const doFetch: typeof fetch = options.fetch ?? ((input, init) => fetch(input, init));
  const timeoutMs = options.timeoutMs ?? 120_000;
  const transport = gpuTransport(options);
  const { send, call } = transport;

  /**
   * A streamed graft, generation or solve: calls `onToken` per token and resolves to what `final`
   * takes from the final event (`summary` of a generation, `solved` of a solve).
   */
  async function stream<T>(
    path: string,
    body: object,
    final: (e: StreamEvent) => T | undefined,
    opts: StreamOptions = {},
  ): Promise<T> {
    for await (const e of events(path, body, opts)) {
      if (e.event === "token") {
        opts.onToken?.(e.data.token, e.data.text);
        continue;
      }
      if (e.event === "error")
        throw new GpuError(e.data.status, e.data.error.code, e.data.error.message, e.data.error.details);
      const result = final(e);
      if (result === undefined) throw new GpuError(502, "gpu_bad_response", `unexpected event '${e.event}'`);
      return result;
    }
    throw new GpuError(502, "gpu_bad_response", "the stream ended without its final event");
  }
  const summary = (e: StreamEvent) => (e.event === "summary" ? e.data : undefined);
  const solved = (e: StreamEvent) => (e.event === "solved" ? e.data : undefined);

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
    deposit: (text: string, opts?: CallOptions): Promise<DepositResult> =>
      call("POST", gpuPaths.blocks, depositResultSchema, { text }, opts),
    listBlocks: async (): Promise<BlockManifest[]> =>
      (await call("GET", gpuPaths.blocks, blockListSchema)).blocks,
    getBlock: (id: string): Promise<BlockManifest> => call("GET", gpuPaths.block(id), blockManifestSchema),
    deleteBlock: (id: string): Promise<void> => call("DELETE", gpuPaths.block(id), null),
    verifyBlock: (id: string, opts?: CallOptions): Promise<VerifyResult> =>
      call("POST", gpuPaths.verifyBlock(id), verifyBlockResultSchema, {}, opts),
    prefetch: async (id: string, tier: "hot" | "warm" | "cold" = "hot", opts?: CallOptions): Promise<Tier> =>
      (await call("POST", gpuPaths.prefetch(id), prefetchResultSchema, { tier }, opts)).tier,
    graft: (req: Omit<GraftRequest, "stream">, opts?: CallOptions): Promise<GenerationResult> =>
      call("POST", gpuPaths.graft, generationResultSchema, { ...req, stream: false }, opts),
    generate: (req: Omit<GenerateRequest, "stream">, opts?: CallOptions): Promise<GenerationResult> =>
      call("POST", gpuPaths.generate, generationResultSchema, { ...req, stream: false }, opts),
    /** Streamed graft: tokens as they come, then the same result as `graft`. */
    graftStream: (req: Omit<GraftRequest, "stream">, opts?: StreamOptions): Promise<GenerationResult> =>
      stream(gpuPaths.graft, req, summary, opts),
    generateStream: (req: Omit<GenerateRequest, "stream">, opts?: StreamOptions): Promise<GenerationResult> =>
      stream(gpuPaths.generate, req, summary, opts),
    /** Raw validated events of a streamed graft or generation. */
    events: (
      kind: "graft" | "generate",
      req: Omit<GraftRequest, "stream"> | Omit<GenerateRequest, "stream">,
      opts?: CallOptions,
    ) => events(kind === "graft" ? gpuPaths.graft : gpuPaths.generate, req, opts),
    /** The sampled solve pipeline (k samples, programs in the sandbox, a vote). */
    solve: (req: Omit<SolveRequest, "stream">, opts?: CallOptions): Promise<SolveResult> =>
      call("POST", gpuPaths.solve, solveResultSchema, { ...req, stream: false }, opts),
    /** Streamed solve: every sample's tokens as they come, then the same result as `solve`. */
    solveStream: (req: Omit<SolveRequest, "stream">, opts?: StreamOptions): Promise<SolveResult> =>
      stream(gpuPaths.solve, req, solved, opts),
    sandboxRun: (req: SandboxRunRequest): Promise<SandboxRunResult> =>
      call("POST", gpuPaths.sandboxRun, sandboxRunResultSchema, req),
    ...blockFileCalls(transport),
  };
}

/** The client's type, for dependency injection. */
export type GpuNodeClient = ReturnType<typeof createGpuClient>;
