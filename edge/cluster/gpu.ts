/**
 * The edge's dependency on a GPU node, behind one small interface (`GpuClient`), implemented over
 * the GPU node's own signed client (shared/gpu-client.ts: fetch + Web Crypto, so it runs in
 * Node and in Workers). Every call has a timeout, and model work sends the node the same deadline.
 * Failures become DomainErrors here, once: connection refused or a node that cannot take work ->
 * 503 `gpu_unavailable` (with Retry-After), a node that runs no programs -> 501
 * `sandbox_unavailable` (permanent: no Retry-After), timeout -> 504 `gpu_timeout`, an answer the edge
 * cannot use -> 502 `gpu_bad_response`; the node's own 4xx verdicts about the request (404
 * `block_not_found`, 409, 413, 422) keep their status and code.
 */

import type { z } from "zod";
import { ZodError } from "zod";
import { DomainError } from "../../shared/errors.js";
import { createGpuClient, GpuError, type StreamOptions } from "../../shared/gpu-client.js";
import type { ProgramParam } from "../../shared/params.js";
import type {
  BlockManifest,
  GenerationResult,
  Health,
  sandboxRunResultSchema,
} from "../../shared/protocol.js";
import type { SolveRequest, SolveResult } from "../../shared/solve-protocol.js";

export type SandboxRunResult = z.infer<typeof sandboxRunResultSchema>;

/** The GPU node as the edge uses it. */
export interface GpuClient {
  /** Whether a node is configured at all (false: every call fails 503 `gpu_unavailable`). */
  readonly configured: boolean;
  /** Prefills the text, saves and verifies its state; returns the block's manifest. */
  deposit(text: string): Promise<BlockManifest>;
  /** Restores a block and answers the query after it; streamed when `opts.onToken` is set. */
  graft(
    req: { blockId: string; query: string; maxTokens: number },
    opts?: ModelCallOptions,
  ): Promise<GenerationResult>;
  /** Plain generation without a block. */
  generate(req: { prompt: string; maxTokens: number }): Promise<GenerationResult>;
  /** The sampled solve pipeline (k samples, programs run in the sandbox, a vote); abortable, streamed when `opts.onToken` is set. */
  solve(req: Omit<SolveRequest, "stream">, opts?: ModelCallOptions): Promise<SolveResult>;
  /** Runs a program in the node's sandbox (`PARAMS = [...]` prepended; see gpu-node/sandbox). */
  runProgram(req: {
    program: string;
    params: readonly ProgramParam[];
    expect?: string;
  }): Promise<SandboxRunResult>;
  /** A stored block's manifest. */
  getBlock(id: string): Promise<BlockManifest>;
  /** Deletes a block from the node's store. */
  deleteBlock(id: string): Promise<void>;
  /** The node's health (short timeout; a draining node reports `draining`). */
  health(): Promise<Health>;
}

/**
 * How a caller holds model work: aborting `signal` aborts the call to the node (whose stream then
 * ends and frees the slot); with `onToken` the node streams and each token's text arrives as it
 * is generated.
 */
export interface ModelCallOptions {
  signal?: AbortSignal;
  onToken?: (text: string) => void;
}

/** The signed client's options for one model call: the deadline, the caller's signal, the token sink. */
export function modelCall(
  base: { deadlineMs: number; signal?: AbortSignal },
  opts: ModelCallOptions = {},
): StreamOptions {
  const signals = [base.signal, opts.signal].filter((s): s is AbortSignal => s !== undefined);
  const { onToken } = opts;
  return {
    deadlineMs: base.deadlineMs,
    ...(signals.length ? { signal: signals.length === 1 ? signals[0] : AbortSignal.any(signals) } : {}),
    ...(onToken ? { onToken: (_token: number, text: string) => onToken(text) } : {}),
  };
}

export interface EdgeGpuClientOptions {
  /** Base URL of the node; null means none is configured. */
  baseUrl: string | null;
  secret: string | null;
  timeoutMs: number;
  healthTimeoutMs?: number;
  /** Injectable for runtimes that need their own fetch. */
  fetch?: typeof fetch;
  /** Sent on every call (the Cloudflare Access service token in front of the node). */
  headers?: Record<string, string>;
}

/** The GPU client the edge uses: signed, time-bounded, every failure a DomainError. */
export function createEdgeGpuClient(options: EdgeGpuClientOptions): GpuClient {
  const { baseUrl, secret } = options;
  if (baseUrl === null || secret === null) return notConfigured;
  const fetchOpt = {
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
  };
  const node = createGpuClient({ baseUrl, secret, timeoutMs: options.timeoutMs, ...fetchOpt });
  const probe = createGpuClient({
    baseUrl,
    secret,
    timeoutMs: options.healthTimeoutMs ?? options.timeoutMs,
    ...fetchOpt,
  });
  const work = { deadlineMs: options.timeoutMs };
  const mapped =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>, timeoutMs = options.timeoutMs) =>
    async (...args: A): Promise<R> => {
      try {
        return await fn(...args);
      } catch (err) {
        throw toDomainError(err, timeoutMs);
      }
    };
  return {
    configured: true,
    deposit: mapped((text: string) => node.deposit(text, work)),
    graft: mapped((req: { blockId: string; query: string; maxTokens: number }, opts?: ModelCallOptions) =>
      opts?.onToken ? node.graftStream(req, modelCall(work, opts)) : node.graft(req, modelCall(work, opts)),
    ),
    generate: mapped((req: { prompt: string; maxTokens: number }) => node.generate(req, work)),
    solve: mapped((req: Omit<SolveRequest, "stream">, opts?: ModelCallOptions) =>
      opts?.onToken ? node.solveStream(req, modelCall(work, opts)) : node.solve(req, modelCall(work, opts)),
    ),
    runProgram: mapped((req: { program: string; params: readonly ProgramParam[]; expect?: string }) =>
      node.sandboxRun(req),
    ),
    getBlock: mapped((id: string) => node.getBlock(id)),
    deleteBlock: mapped((id: string) => node.deleteBlock(id)),
    health: mapped(() => probe.health(), options.healthTimeoutMs ?? options.timeoutMs),
  };
}

const notConfiguredError = () =>
  new DomainError(503, "gpu_unavailable", "No GPU node is configured on this edge.");
const refuse = async (): Promise<never> => {
  throw notConfiguredError();
};
const notConfigured: GpuClient = {
  configured: false,
  deposit: refuse,
  graft: refuse,
  generate: refuse,
  solve: refuse,
  runProgram: refuse,
  getBlock: refuse,
  deleteBlock: refuse,
  health: refuse,
};

/** Upstream statuses whose verdict is about the request and passes through unchanged. */
const PASS_THROUGH = new Set([400, 404, 409, 413, 422]);

/** Maps whatever a GPU call threw to the edge's DomainError. */
export function toDomainError(err: unknown, timeoutMs: number): DomainError {
  // A GpuError is a DomainError too, but the node's; it is mapped to the edge's own here.
  if (err instanceof GpuError) {
    const details = { upstreamStatus: err.status, upstreamCode: err.code };
    // The node runs no programs (its sandbox backend cannot start there): the feature says so, not
    // a busy GPU, and waiting will not change it, so there is no Retry-After.
    if (err.code === "sandbox_unavailable")
      return new DomainError(
        501,
        "sandbox_unavailable",
        "The GPU node runs no programs (its sandbox cannot start there; its /health says why), so it cannot do this.",
        details,
      );
    if (err.status === 429 || err.status === 503)
      return new DomainError(
        503,
        "gpu_unavailable",
        `The GPU node cannot take the request now (${err.code}).`,
        details,
        Math.max(1, Math.ceil(err.retryAfterS ?? 5)),
      );
    if (err.status === 507)
      return new DomainError(
        503,
        "gpu_storage_full",
        "The GPU node cannot store blocks now (its disk is full).",
        details,
        60,
      );
    if (err.status === 504)
      return new DomainError(504, "gpu_timeout", "The GPU node ran out of time.", details);
    if (PASS_THROUGH.has(err.status) && err.code !== "gpu_bad_response")
      return new DomainError(err.status as 400 | 404 | 409 | 413 | 422, err.code, err.message, err.details);
    return new DomainError(502, "gpu_bad_response", `The GPU node answered HTTP ${err.status}.`, details);
  }
  if (err instanceof DomainError) return err;
  if (err instanceof ZodError || err instanceof SyntaxError)
    return new DomainError(502, "gpu_bad_response", "The GPU node's answer does not match the protocol.", {
      issues:
        err instanceof ZodError
          ? err.issues.slice(0, 5).map((i) => `${i.path.join(".")}: ${i.message}`)
          : [err.message],
    });
  const name = err instanceof Error ? err.name : "";
  if (name === "TimeoutError" || name === "AbortError")
    return new DomainError(504, "gpu_timeout", `The GPU node did not answer within ${timeoutMs} ms.`);
  // fetch failed: connection refused, reset, DNS, TLS: the node cannot be reached.
  return new DomainError(503, "gpu_unavailable", "The GPU node cannot be reached.", undefined, 5);
}
