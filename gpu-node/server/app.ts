/**
 * The GPU node's HTTP API as a Hono app: `/health` is open, everything else is signed by the edge.
 * Routes are thin (validate, call the block service, return); model work passes an admission
 * queue, carries a deadline, and stops when its client goes away. Errors map to HTTP in one place.
 */

import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { type Context, Hono } from "hono";
import { z } from "zod";
import { badRequest, DomainError, forbidden, unauthorized, unavailable } from "../../shared/errors.js";

import { type ErrorMappingOptions, errorAnswer, onError, routeNotFound } from "../../shared/http/errors.js";
import { readJson } from "../../shared/http/json-body.js";
import { createLogger, type Logger } from "../../shared/http/logger.js";
import { requestId } from "../../shared/http/request-id.js";
import { requestLog, routeOf } from "../../shared/http/request-log.js";
import { declaredLengthLimit, readBodyOnce, signatureAuth } from "../../shared/http/signature.js";
import {
  BLOCK_MANIFEST_HEADER,
  type BlockManifest,
  CHUNK_SHA256_HEADER,
  DEADLINE_HEADER,
  depositRequestSchema,
  encodeManifestHeader,
  type GenerationResult,
  generateRequestSchema,
  graftRequestSchema,
  type Health,
  importStartSchema,
  LIMITS,
  prefetchRequestSchema,
  sandboxRunRequestSchema,
  sha256Schema,
  solveRequestSchema,
} from "../../shared/protocol.js";
import { UPLOAD_GRANT_HEADER, type UploadGrantClaims, verifyUploadGrant } from "../../shared/upload-grant.js";
import { BlockService } from "../blocks/block-service.js";
import type { Blocks, GenerationOptions } from "../blocks/types.js";
import type { ProgramJob, ProgramResult } from "../sandbox/sandbox.js";
import { type SolveInput, Solver } from "../solve/solver.js";
import { type AccessConfig, accessAuth } from "./access.js";
import { ImportSessions, importIdSchema } from "./imports.js";
import { Collector, Counter, Histogram, PROMETHEUS_CONTENT_TYPE, Registry } from "./metrics.js";
import { NonceLog } from "./nonce-log.js";
import { AdmissionQueue } from "./queue.js";
import { EventChannel } from "./sse.js";

/** Tunable limits of the HTTP layer; every field has a default. */
export interface ServerLimits {
  /** Model jobs running at once; default the block service's slot count. */
  concurrency: number;
  /** Model jobs allowed to wait; one more is a 429. Default twice the concurrency. */
  maxWaiting: number;
  /** Largest JSON request body. Import chunks have their own limit (LIMITS.importChunkBytes). */
  bodyBytes: number;
  /** Deadline of model work when the request names none. */
  defaultDeadlineMs: number;
  /** Longest deadline granted; a request asking for more gets this. */
  maxDeadlineMs: number;
  maxImports: number;
  maxImportBytes: number;
  importIdleTimeoutMs: number;
  /** Retry-After of a full queue or a draining node. */
  retryAfterS: number;
}

/** The sandbox as the server needs it (a SandboxPool fits). */
export interface SandboxRunner {
  readonly isolation: string;
  /** Runs one job; `signal` ends its wait for a slot (the request's deadline, client and shutdown). */
  runProgram(job: ProgramJob, signal?: AbortSignal): Promise<ProgramResult>;
}

export interface GpuAppOptions {
  blocks: Blocks;
  /** Shared secret of the edge's request signatures. */
  secret: string;
  /** Identity of the loaded model and engine, for health and import checks. */
  fingerprints: { model: Health["model"]; engine: Health["engine"] };
  /** Data directory of the node; import uploads go to `<dataDir>/imports`. */
  dataDir: string;
  limits?: Partial<ServerLimits>;
  sandbox?: SandboxRunner;
  /** Why there is no sandbox (for /health and the 503s); default "disabled". */
  sandboxUnavailable?: string;
  /** The solve pipeline; default one over the block service's engine and slots and the sandbox. */
  solver?: { solve(req: SolveInput, signal?: AbortSignal): ReturnType<Solver["solve"]> };
  /** When set, every signed route also needs a valid Cloudflare Access JWT. */
  access?: AccessConfig;
  /** GPU memory, when the backend reports it. */
  vram?: () => Promise<{ usedBytes: number; totalBytes: number } | null>;
  maxSkewS?: number;
  /** Where request lines and unexpected errors go; default JSON lines on stderr at level info. */
  logger?: Logger;
  /** Path of a stored block's state file after its hash check (serves `GET /v1/blocks/:id/file`). */
  blockFile?: (id: string) => Promise<string>;
}

/** The app plus the handles its runtime entry needs to drain and stop it. */
export interface GpuApp {
  app: Hono<Env>;
  queue: AdmissionQueue;
  readonly draining: boolean;
  /** Requests in progress (streams included), health and metrics excluded. */
  readonly inFlight: number;
  /** Refuse new work from now on (503 `draining`); health reports `draining`. */
  drain(): void;
  /** Resolves true once nothing is in flight, false if `timeoutMs` passes first. */
  waitIdle(timeoutMs: number): Promise<boolean>;
  /** Stops running generations (they end with finishReason "aborted"). */
  abortAll(): void;
  /** Drops open imports and their files. */
  close(): Promise<void>;
}

type Env = {
  Variables: { requestId: string; clientSignal: AbortSignal; grant: UploadGrantClaims | undefined };
};

const CHUNK_ROUTE = /^\/v1\/imports\/[^/]+\/chunks\/[^/]+$/;
const IMPORT_ROUTE = /^\/v1\/imports(\/|$)/;
const GRANT_SCHEME = /^KvgraftUpload\s+(\S+)$/i;

/** The upload grant a request carries (`Authorization: KvgraftUpload <grant>` or the header), if any. */
function grantToken(c: Context): string | undefined {
  const auth = c.req.header("authorization")?.match(GRANT_SCHEME)?.[1];
  return auth ?? c.req.header(UPLOAD_GRANT_HEADER) ?? undefined;
}
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

function blockIdParam(c: Context): string {
  const id = sha256Schema.safeParse(c.req.param("id"));
  if (!id.success) throw badRequest("invalid_block_id", "block ids are lower-case hex SHA-256");
  return id.data;
}

/**
 * A failed write to the node's disk, as a clear error instead of a generic 500: ENOSPC/EDQUOT
 * from Node's fs (manifests, import chunks) is `disk_full`; llama.cpp reports a failed state save
 * without its errno, so that one is `storage_write_failed`. Both answer 507 (Insufficient Storage).
 */
function storageFailure(err: unknown): DomainError | null {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === "ENOSPC" || code === "EDQUOT")
    return new DomainError(507, "disk_full", "the node's disk is full; nothing was stored");
  if (err instanceof Error && /failed to save state to file/i.test(err.message))
    return new DomainError(
      507,
      "storage_write_failed",
      "the node could not write the block's state file (disk full or I/O error); nothing was stored",
    );
  return null;
}

/** Request bodies of the node: an empty body is `{}`, so that all-default requests need none. */
const jsonBody = <S extends z.ZodType>(c: Context, schema: S) => readJson(c, schema, { emptyAsObject: true });

/** Builds the GPU node's app. */
export function createGpuApp(options: GpuAppOptions): GpuApp {
  const { blocks } = options;
  const concurrency = options.limits?.concurrency ?? blocks.snapshot().slots.total;
  const limits: ServerLimits = {
    concurrency,
    maxWaiting: 2 * concurrency,
    bodyBytes: 4 * 2 ** 20,
    defaultDeadlineMs: 120_000,
    maxDeadlineMs: 600_000,
    maxImports: 4,
    maxImportBytes: 64 * 2 ** 30,
    importIdleTimeoutMs: 10 * 60_000,
    retryAfterS: 1,
    ...options.limits,
  };
  const logger = options.logger ?? createLogger();
  const errorMapping: ErrorMappingOptions = { logger, translate: storageFailure };
  const queue = new AdmissionQueue(limits.concurrency, limits.maxWaiting, limits.retryAfterS);
  const imports = new ImportSessions(
    join(options.dataDir, "imports"),
    {
      maxSessions: limits.maxImports,
      maxBytes: limits.maxImportBytes,
      idleTimeoutMs: limits.importIdleTimeoutMs,
    },
    { ...options.fingerprints, hasBlock: (sha) => blocks.list().some((m) => m.sha256 === sha) },
  );
  const solver =
    options.solver ??
    (options.sandbox && blocks instanceof BlockService
      ? new Solver(blocks.engine, blocks.pool, options.sandbox)
      : undefined);
  const noSandbox = options.sandboxUnavailable ?? "disabled";
  const started = Date.now();
  let draining = false;
  let inFlight = 0;
  const shutdown = new AbortController();

  // --- metrics ---
  const registry = new Registry();
  const requests = registry.register(
    new Counter("kvgraft_http_requests_total", "HTTP requests by route, method and status."),
  );
  const latency = registry.register(
    new Histogram(
      "kvgraft_http_request_duration_seconds",
      "Time to the response head by route.",
      LATENCY_BUCKETS,
    ),
  );
  const tokensIn = registry.register(
    new Counter("kvgraft_tokens_in_total", "Prompt/query tokens evaluated."),
  );
  const tokensOut = registry.register(new Counter("kvgraft_tokens_out_total", "Tokens generated."));
  const generations = registry.register(
    new Counter("kvgraft_generations_total", "Grafts and generations by kind and finish reason."),
  );
  const snap = () => blocks.snapshot();
  const tiers = ["hot", "warm", "cold"] as const;
  registry.register(
    new Collector(
      "kvgraft_tier_hits_total",
      "Block restores served by tier.",
      () => tiers.map((tier) => ({ labels: { tier }, value: snap().hits[tier] })),
      "counter",
    ),
  );
  registry.register(
    new Collector(
      "kvgraft_tier_misses_total",
      "Restores that missed the hot tier.",
      () => [{ value: snap().misses }],
      "counter",
    ),
  );
  registry.register(
    new Collector(
      "kvgraft_restore_seconds_total",
      "Time spent restoring blocks, by tier.",
      () => tiers.map((tier) => ({ labels: { tier }, value: snap().restoreMsSum[tier] / 1000 })),
      "counter",
    ),
  );
  registry.register(
    new Collector(
      "kvgraft_restore_bytes_total",
      "Bytes of block state loaded, by tier.",
      () => tiers.map((tier) => ({ labels: { tier }, value: snap().bytesLoaded[tier] })),
      "counter",
    ),
  );
  registry.register(
    new Collector("kvgraft_blocks", "Blocks by tier (cold = all stored blocks).", () => {
      const s = snap();
      return [
        { labels: { tier: "hot" }, value: s.hot.length },
        { labels: { tier: "warm" }, value: s.warm.length },
        { labels: { tier: "cold" }, value: s.coldCount },
      ];
    }),
  );
  registry.register(
    new Collector("kvgraft_warm_tier_bytes", "RAM used by the warm tier.", () => [
      { value: snap().warmBytes },
    ]),
  );
  registry.register(
    new Collector("kvgraft_slots_busy", "Engine slots in use.", () => [{ value: snap().slots.busy }]),
  );
  registry.register(
    new Collector("kvgraft_queue_depth", "Model jobs running or waiting for admission.", () => [
      { value: queue.depth },
    ]),
  );
  registry.register(
    new Collector("kvgraft_queue_capacity", "Depth at which model jobs are refused.", () => [
      { value: queue.capacity },
    ]),
  );
  registry.register(
    new Collector(
      "kvgraft_queue_rejected_total",
      "Model jobs refused with queue_full.",
      () => [{ value: queue.stats.rejected }],
      "counter",
    ),
  );
  registry.register(
    new Collector("kvgraft_requests_in_flight", "Requests in progress.", () => [{ value: inFlight }]),
  );
  registry.register(
    new Collector("kvgraft_imports_open", "Open import sessions.", () => [{ value: imports.count }]),
  );
  registry.register(
    new Collector("kvgraft_draining", "1 while draining.", () => [{ value: draining ? 1 : 0 }]),
  );
  let vramSample: { usedBytes: number; totalBytes: number } | null = null;
  registry.register(
    new Collector("kvgraft_vram_bytes", "GPU memory (when the backend reports it).", () =>
      vramSample
        ? [
            { labels: { kind: "used" }, value: vramSample.usedBytes },
            { labels: { kind: "total" }, value: vramSample.totalBytes },
          ]
        : [],
    ),
  );

  // --- model work: admission, deadline, cancellation ---
  interface Work {
    signal: AbortSignal;
    deadline: AbortSignal;
    client: AbortSignal;
    release: () => void;
  }

  const deadlineExceeded = () =>
    new DomainError(504, "deadline_exceeded", "the request's deadline passed before any output");
  const shuttingDown = () => unavailable("shutting_down", "the node is shutting down", limits.retryAfterS);

  function deadlineMs(c: Context): number {
    const raw = c.req.header(DEADLINE_HEADER);
    if (raw === undefined) return limits.defaultDeadlineMs;
    const ms = Number(raw);
    if (!/^\d{1,12}$/.test(raw) || ms < 1)
      throw badRequest("invalid_deadline", `${DEADLINE_HEADER} must be a positive integer (milliseconds)`);
    // A longer budget than the node grants is not an error: the node's limit applies.
    return Math.min(ms, limits.maxDeadlineMs);
  }

  /** Maps an abort to the error its cause deserves; other errors pass through. */
  function abortError(err: unknown, work: Pick<Work, "deadline" | "client">): unknown {
    if (err instanceof DomainError) return err;
    if (work.deadline.aborted) return deadlineExceeded();
    if (shutdown.signal.aborted) return shuttingDown();
    // Nobody reads this answer; it only keeps a departed client out of the 5xx counts and logs.
    if (work.client.aborted) return badRequest("client_closed", "the client closed the connection");
    return err;
  }

  async function admit(c: Context<Env>): Promise<Work> {
    if (draining) throw unavailable("draining", "the node is draining; use another node", limits.retryAfterS);
    const deadline = AbortSignal.timeout(deadlineMs(c));
    const client = c.var.clientSignal;
    const signal = AbortSignal.any([deadline, client, shutdown.signal]);
    try {
      return { signal, deadline, client, release: await queue.acquire(signal) };
    } catch (err) {
      throw abortError(err, { deadline, client });
    }
  }

  /** Runs model work that takes no signal of its own: the deadline bounds only its wait. */
  async function queued<T>(c: Context<Env>, run: () => Promise<T>): Promise<T> {
    const work = await admit(c);
    try {
      return await run();
    } finally {
      work.release();
    }
  }

  function recordGeneration(kind: string, result: GenerationResult): void {
    tokensIn.inc({ kind }, result.tokensIn);
    tokensOut.inc({ kind }, result.tokensOut);
    generations.inc({ kind, finish_reason: result.finishReason });
  }

  /** A graft or generation, as JSON or as server-sent events. */
  async function generation(
    c: Context<Env>,
    kind: "graft" | "generate",
    stream: boolean,
    run: (options: Pick<GenerationOptions, "signal" | "onToken">) => Promise<GenerationResult>,
  ): Promise<Response> {
    const work = await admit(c);
    /** The result, unless it was cut off before producing anything. */
    const finish = (result: GenerationResult): GenerationResult => {
      recordGeneration(kind, result);
      if (result.finishReason === "aborted" && result.tokensOut === 0) {
        const err = abortError(new Error("aborted"), work);
        if (err instanceof DomainError) throw err;
      }
      return result;
    };
    if (!stream) {
      try {
        return c.json(finish(await run({ signal: work.signal })));
      } catch (err) {
        throw abortError(err, work);
      } finally {
        work.release();
      }
    }
    const cancel = new AbortController();
    const signal = AbortSignal.any([work.signal, cancel.signal]);
    const channel = new EventChannel(() => cancel.abort(new Error("client closed the stream")));
    const done = (async () => {
      try {
        const result = await run({
          signal,
          onToken: (token, text) => channel.send({ event: "token", data: { token, text } }),
        });
        channel.send({ event: "summary", data: finish(result) });
      } catch (err) {
        const mapped = abortError(err, work);
        // Nothing sent yet: answer with a plain error status instead of a stream.
        if (!channel.started) throw mapped;
        const { status, body } = errorAnswer(mapped, c.var.requestId, errorMapping);
        channel.send({ event: "error", data: { ...body, status } });
      } finally {
        channel.close();
        work.release();
      }
    })();
    await Promise.race([channel.firstEvent, done]);
    return channel.response();
  }

  // --- app ---
  const app = new Hono<Env>();

  app.onError(onError(errorMapping));
  app.notFound(routeNotFound("not_found"));

  // Outermost: request id (the edge's, passed on), the request's log line, then the client
  // signal, in-flight count and request metrics.
  const unlogged = (c: Context) => c.req.path === "/health" || c.req.path === "/metrics";
  app.use("*", requestId({ acceptIncoming: true }));
  app.use("*", requestLog(logger, { skip: unlogged }));
  app.use("*", async (c, next) => {
    c.set("clientSignal", c.req.raw.signal);
    const t0 = performance.now();
    const counted = !unlogged(c);
    if (counted) inFlight++;
    try {
      await next();
    } finally {
      const route = routeOf(c);
      requests.inc({ route, method: c.req.method, status: String(c.res.status) });
      latency.observe({ route }, (performance.now() - t0) / 1000);
      const streaming = c.res.headers.get("content-type")?.startsWith("text/event-stream") && c.res.body;
      // A stream stays in flight until its body ends or its client goes away.
      if (counted && streaming) c.res = countWhileStreaming(c.res);
      else if (counted) inFlight--;
    }
  });

  function countWhileStreaming(res: Response): Response {
    let done = false;
    const end = () => {
      if (!done) inFlight--;
      done = true;
    };
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done: finished, value } = await reader.read();
        if (finished) {
          end();
          controller.close();
        } else controller.enqueue(value);
      },
      async cancel(reason) {
        end();
        await reader.cancel(reason);
      },
    });
    return new Response(body, res);
  }

  // A declared length over the bound is refused here; bodies are read only after authentication.
  const maxBody = (c: Context) =>
    c.req.method === "PUT" && CHUNK_ROUTE.test(c.req.path) ? LIMITS.importChunkBytes : limits.bodyBytes;
  app.use("*", declaredLengthLimit(maxBody));

  app.get("/health", (c) => {
    const s = blocks.snapshot();
    const health: Health = {
      status: draining ? "draining" : s.slots.retired > 0 ? "degraded" : "ok",
      model: options.fingerprints.model,
      engine: options.fingerprints.engine,
      slots: s.slots,
      tiers: { hot: s.hot, warm: s.warm, coldCount: s.coldCount },
      queue: { depth: queue.depth, capacity: queue.capacity },
      sandbox: options.sandbox
        ? { isolation: options.sandbox.isolation }
        : { isolation: "none", reason: noSandbox },
      uptimeS: Math.round((Date.now() - started) / 1000),
    };
    // 503 while draining tells load balancers to stop sending; the body says why.
    return c.json(health, draining ? 503 : 200);
  });

  // Everything but /health (unknown paths too) needs Access (when configured) and a signature.
  const open = (c: Context) => c.req.path === "/health";
  const access = options.access ? accessAuth(options.access) : undefined;
  if (access) app.use("*", (c, next) => (open(c) ? next() : access(c, next)));
  const signature = signatureAuth({
    secret: options.secret,
    nonces: NonceLog.open(join(options.dataDir, "nonces.log")),
    maxBodyBytes: maxBody,
    ...(options.maxSkewS !== undefined ? { maxSkewS: options.maxSkewS } : {}),
  });
  // An edge upload grant replaces the signature on the import routes only, for its one block.
  const grantImports = new Map<string, string>();
  app.use("*", async (c, next) => {
    if (open(c)) return next();
    const token = grantToken(c);
    if (token === undefined) return signature(c, next);
    if (!IMPORT_ROUTE.test(c.req.path))
      throw forbidden("grant_scope", "an upload grant is only good for the import endpoints");
    const verdict = await verifyUploadGrant(options.secret, token);
    if (!verdict.ok) throw unauthorized(verdict.code, "the upload grant is not valid");
    c.set("grant", verdict.claims);
    await readBodyOnce(c, maxBody(c));
    await next();
  });
  /** With a grant, an import session must be the one the grant started. */
  function checkGrantSession(c: Context<Env>, id: string): void {
    const grant = c.var.grant;
    if (grant && grantImports.get(id) !== grant.sha256)
      throw forbidden("grant_scope", "this import was not started with this upload grant");
  }

  app.get("/metrics", async (c) => {
    vramSample = options.vram ? await options.vram().catch(() => null) : null;
    return c.body(registry.render(), 200, { "content-type": PROMETHEUS_CONTENT_TYPE });
  });

  app.post("/v1/blocks", async (c) => {
    const { text } = await jsonBody(c, depositRequestSchema);
    return c.json(await queued(c, () => blocks.deposit(text)), 201);
  });
  app.get("/v1/blocks", (c) => c.json({ blocks: blocks.list() }));
  app.get("/v1/blocks/:id", (c) => c.json(blocks.get(blockIdParam(c))));
  app.get("/v1/blocks/:id/file", async (c) => {
    const id = blockIdParam(c);
    const manifest = blocks.get(id);
    if (!options.blockFile) throw unavailable("file_unavailable", "this node does not serve block files");
    const path = await options.blockFile(id);
    const { size } = await stat(path);
    const body = Readable.toWeb(
      createReadStream(path, { highWaterMark: 1 << 20 }),
    ) as ReadableStream<Uint8Array>;
    return new Response(body, {
      status: 200,
      headers: {
        "content-type": "application/octet-stream",
        "content-length": String(size),
        [BLOCK_MANIFEST_HEADER]: encodeManifestHeader(manifest),
        "x-request-id": c.var.requestId,
      },
    });
  });
  app.delete("/v1/blocks/:id", async (c) => {
    await blocks.delete(blockIdParam(c));
    return c.body(null, 204);
  });
  app.post("/v1/blocks/:id/verify", async (c) => {
    const id = blockIdParam(c);
    return c.json(await queued(c, () => blocks.verify(id)));
  });
  app.post("/v1/blocks/:id/prefetch", async (c) => {
    const id = blockIdParam(c);
    const { tier } = await jsonBody(c, prefetchRequestSchema);
    return c.json({ blockSha256: id, tier: await queued(c, () => blocks.prefetch(id, tier)) });
  });

  app.post("/v1/graft", async (c) => {
    const req = await jsonBody(c, graftRequestSchema);
    return generation(c, "graft", req.stream, (o) =>
      blocks.graft(req.blockId, req.query, {
        maxTokens: req.maxTokens,
        ...(req.sampling ? { sampling: req.sampling } : {}),
        ...(req.acceptEngineMismatch ? { acceptEngineMismatch: true } : {}),
        ...o,
      }),
    );
  });
  app.post("/v1/generate", async (c) => {
    const req = await jsonBody(c, generateRequestSchema);
    return generation(c, "generate", req.stream, (o) =>
      blocks.generate(req.prompt, {
        maxTokens: req.maxTokens,
        ...(req.sampling ? { sampling: req.sampling } : {}),
        ...o,
      }),
    );
  });

  app.post("/v1/solve", async (c) => {
    const req = await jsonBody(c, solveRequestSchema);
    if (!solver) throw unavailable("sandbox_unavailable", "this node has no sandbox, so it cannot solve");
    const work = await admit(c);
    try {
      const result = await solver.solve(req, work.signal);
      tokensIn.inc({ kind: "solve" }, result.tokensIn);
      tokensOut.inc({ kind: "solve" }, result.tokensOut);
      return c.json(result);
    } catch (err) {
      throw abortError(err, work);
    } finally {
      work.release();
    }
  });

  app.post("/v1/imports", async (c) => {
    if (draining) throw unavailable("draining", "the node is draining; use another node", limits.retryAfterS);
    const req = await jsonBody(c, importStartSchema);
    const grant = c.var.grant;
    if (grant && (req.manifest.sha256 !== grant.sha256 || req.sizeBytes !== grant.sizeBytes))
      throw new DomainError(403, "grant_mismatch", "the upload grant is for another block", {
        grantSha256: grant.sha256,
        grantSizeBytes: grant.sizeBytes,
      });
    const started = await imports.start(req);
    if (grant) {
      if (grantImports.size >= 1000) grantImports.delete(grantImports.keys().next().value as string);
      grantImports.set(started.importId, grant.sha256);
    }
    return c.json(started, 201);
  });
  app.put("/v1/imports/:id/chunks/:index", async (c) => {
    const id = importIdSchema.parse(c.req.param("id"));
    checkGrantSession(c, id);
    const index = z.coerce.number().int().nonnegative().parse(c.req.param("index"));
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    return c.json(await imports.putChunk(id, index, bytes, c.req.header(CHUNK_SHA256_HEADER)));
  });
  app.post("/v1/imports/:id/commit", async (c) => {
    const id = importIdSchema.parse(c.req.param("id"));
    checkGrantSession(c, id);
    imports.assertComplete(id);
    const manifest: BlockManifest = await queued(c, () =>
      imports.commit(id, (path, m) => blocks.importFile(path, m)),
    );
    grantImports.delete(id);
    return c.json(manifest, 201);
  });
  app.delete("/v1/imports/:id", async (c) => {
    const id = importIdSchema.parse(c.req.param("id"));
    checkGrantSession(c, id);
    await imports.abort(id);
    grantImports.delete(id);
    return c.body(null, 204);
  });

  app.post("/v1/sandbox/run", async (c) => {
    const req = await jsonBody(c, sandboxRunRequestSchema);
    if (!options.sandbox)
      throw unavailable("sandbox_unavailable", `this node runs no programs: ${noSandbox}`);
    if (draining) throw unavailable("draining", "the node is draining; use another node", limits.retryAfterS);
    // The sandbox's own admission queue: the request's deadline bounds the wait (504), a full queue is a 429.
    const deadline = AbortSignal.timeout(deadlineMs(c));
    const client = c.var.clientSignal;
    const job = {
      source: req.program,
      params: req.params,
      ...(req.expect !== undefined ? { expect: req.expect } : {}),
    };
    const r = await options.sandbox
      .runProgram(job, AbortSignal.any([deadline, client, shutdown.signal]))
      .catch((err: unknown) => {
        throw abortError(err, { deadline, client });
      });
    const { verdict, stdout, stderr, exitCode, cpuMs, wallMs, isolation, answer } = r;
    return c.json({ verdict, stdout, stderr, exitCode, cpuMs, wallMs, isolation, answer });
  });

  return {
    app,
    queue,
    get draining() {
      return draining;
    },
    get inFlight() {
      return inFlight;
    },
    drain() {
      draining = true;
    },
    async waitIdle(timeoutMs) {
      const until = Date.now() + timeoutMs;
      while (inFlight > 0 || queue.depth > 0) {
        if (Date.now() >= until) return false;
        await new Promise((r) => setTimeout(r, 25));
      }
      return true;
    },
    abortAll() {
      shutdown.abort(new Error("the node is shutting down"));
    },
    close: () => imports.close(),
  };
}
