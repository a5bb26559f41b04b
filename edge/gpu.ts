/**
 * The edge's dependency on a GPU node, behind one small interface, and its implementation: a
 * signed `fetch` client (HMAC over method, path, timestamp, nonce and body hash; shared/signing).
 * Runtime-neutral (Node and Workers). Every call has a timeout. Failures become DomainErrors:
 * connection refused or the node saying it cannot take work -> 503 `gpu_unavailable`, timeout ->
 * 504 `gpu_timeout`, anything the edge cannot use -> 502 `gpu_bad_response`; the node's own
 * 4xx verdicts about the request (404 `block_not_found`, 413, 422, ...) keep their status and code.
 */
import { z } from "zod";
import { DomainError } from "../shared/errors.js";
import {
  type BlockManifest,
  blockManifestSchema,
  errorBodySchema,
  type GenerationResult,
  generationResultSchema,
  gpuPaths,
  type Health,
  healthSchema,
} from "../shared/protocol.js";
import { signRequest } from "../shared/signing.js";

/** What the sandbox says about one program run (the GPU node's `/v1/sandbox/run`). */
export const sandboxRunResultSchema = z.looseObject({
  verdict: z.enum(["ok", "wrong_answer", "timeout", "memory", "output_limit", "error"]),
  answer: z.string().nullable(),
  stdout: z.string().optional(),
  stderr: z.string().optional(),
  exitCode: z.number().int().nullable().optional(),
  cpuMs: z.number().optional(),
  wallMs: z.number().optional(),
  isolation: z.string().optional(),
});
export type SandboxRunResult = z.infer<typeof sandboxRunResultSchema>;

/** The GPU node as the edge uses it. */
export interface GpuClient {
  /** Whether a node is configured at all (false: every call fails 503 `gpu_unavailable`). */
  readonly configured: boolean;
  /** Prefills the text, saves and verifies its state; returns the block's manifest. */
  deposit(text: string): Promise<BlockManifest>;
  /** Restores a block and answers the query after it. */
  graft(req: { blockId: string; query: string; maxTokens: number }): Promise<GenerationResult>;
  /** Plain generation without a block. */
  generate(req: { prompt: string; maxTokens: number }): Promise<GenerationResult>;
  /** Runs a program in the node's sandbox (`PARAMS = [...]` prepended; see gpu-node/sandbox). */
  runProgram(req: { program: string; params: number[]; expect?: string }): Promise<SandboxRunResult>;
  /** A stored block's manifest. */
  getBlock(id: string): Promise<BlockManifest>;
  /** Deletes a block from the node's store. */
  deleteBlock(id: string): Promise<void>;
  /** The node's health (short timeout). */
  health(): Promise<Health>;
}

export interface FetchGpuClientOptions {
  /** Base URL of the node; null means none is configured. */
  baseUrl: string | null;
  secret: string | null;
  timeoutMs: number;
  healthTimeoutMs?: number;
  /** Injectable for tests and runtimes; default the global fetch. */
  fetch?: typeof fetch;
}

/** A GPU client that signs every request and maps every failure to a DomainError. */
export function createFetchGpuClient(options: FetchGpuClientOptions): GpuClient {
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const base = options.baseUrl?.replace(/\/+$/, "") ?? null;

  async function call<T>(
    method: "GET" | "POST" | "DELETE",
    path: string,
    body: unknown,
    schema: z.ZodType<T> | null,
    timeoutMs = options.timeoutMs,
  ): Promise<T> {
    if (base === null || options.secret === null)
      throw new DomainError(503, "gpu_unavailable", "No GPU node is configured on this edge.");
    const text = body === undefined ? "" : JSON.stringify(body);
    const headers: Record<string, string> = {
      ...(await signRequest({ secret: options.secret, method, path, body: text })),
      accept: "application/json",
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    let raw: string;
    try {
      res = await doFetch(`${base}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: text } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
      raw = await res.text();
    } catch (err) {
      throw transportError(err, timeoutMs);
    }
    if (!res.ok) throw upstreamError(res, raw);
    if (schema === null) return undefined as T;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw badResponse(`the GPU node answered ${method} ${path} with a body that is not JSON`);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw badResponse(`the GPU node's answer to ${method} ${path} does not match the protocol`, {
        issues: parsed.error.issues.slice(0, 5).map((i) => `${i.path.join(".")}: ${i.message}`),
      });
    return parsed.data;
  }

  const manifestOrWrapped = z.union([
    blockManifestSchema,
    z.object({ manifest: blockManifestSchema }).transform((v) => v.manifest),
  ]);

  return {
    configured: base !== null && options.secret !== null,
    deposit: (text) => call("POST", gpuPaths.blocks, { text }, manifestOrWrapped),
    graft: (req) =>
      call(
        "POST",
        gpuPaths.graft,
        { blockId: req.blockId, query: req.query, maxTokens: req.maxTokens },
        generationResultSchema,
      ),
    generate: (req) =>
      call(
        "POST",
        gpuPaths.generate,
        { prompt: req.prompt, maxTokens: req.maxTokens },
        generationResultSchema,
      ),
    runProgram: (req) =>
      call(
        "POST",
        gpuPaths.sandboxRun,
        {
          program: req.program,
          params: req.params,
          ...(req.expect !== undefined ? { expect: req.expect } : {}),
        },
        z.union([
          sandboxRunResultSchema,
          z.object({ result: sandboxRunResultSchema }).transform((v) => v.result),
        ]),
      ),
    getBlock: (id) => call("GET", gpuPaths.block(id), undefined, manifestOrWrapped),
    deleteBlock: (id) => call("DELETE", gpuPaths.block(id), undefined, null),
    health: () =>
      call("GET", gpuPaths.health, undefined, healthSchema, options.healthTimeoutMs ?? options.timeoutMs),
  };
}

function badResponse(message: string, details?: Record<string, unknown>): DomainError {
  return new DomainError(502, "gpu_bad_response", message, details);
}

/** A fetch that threw: a timeout, or the node could not be reached at all. */
function transportError(err: unknown, timeoutMs: number): DomainError {
  const name = err instanceof Error ? err.name : "";
  if (name === "TimeoutError" || name === "AbortError")
    return new DomainError(504, "gpu_timeout", `The GPU node did not answer within ${timeoutMs} ms.`);
  return new DomainError(503, "gpu_unavailable", "The GPU node cannot be reached.", undefined, 5);
}

/** Upstream status codes whose verdict is about the request and passes through unchanged. */
const PASS_THROUGH = new Set([400, 404, 409, 413, 422]);

/** A non-2xx answer from the node. */
function upstreamError(res: Response, raw: string): DomainError {
  let upstream: z.infer<typeof errorBodySchema> | null = null;
  try {
    const parsed = errorBodySchema.safeParse(JSON.parse(raw));
    if (parsed.success) upstream = parsed.data;
  } catch {
    // not JSON: handled below as a bad response
  }
  const retryAfter = Number(res.headers.get("retry-after"));
  const retryAfterS = Number.isFinite(retryAfter) && retryAfter > 0 ? Math.ceil(retryAfter) : 5;
  if (res.status === 429 || res.status === 503)
    return new DomainError(
      503,
      "gpu_unavailable",
      `The GPU node cannot take the request now${upstream ? ` (${upstream.error.code})` : ""}.`,
      upstream ? { upstreamCode: upstream.error.code } : undefined,
      retryAfterS,
    );
  if (res.status === 504)
    return new DomainError(504, "gpu_timeout", "The GPU node timed out on the request.");
  if (upstream && PASS_THROUGH.has(res.status))
    return new DomainError(
      res.status as 400 | 404 | 409 | 413 | 422,
      upstream.error.code,
      upstream.error.message,
      upstream.error.details,
    );
  return badResponse(`The GPU node answered HTTP ${res.status}.`, {
    upstreamStatus: res.status,
    ...(upstream ? { upstreamCode: upstream.error.code } : {}),
  });
}
