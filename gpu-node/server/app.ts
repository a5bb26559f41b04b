/**
 * The GPU node's HTTP API as a Hono app: `/health` is open, everything else is signed by the edge
 * (or, on the import routes, carries an upload grant). This module wires the parts together; the
 * routes live in routes/ by resource, model work (admission, deadlines, SSE) in work.ts, drain
 * state in drain.ts, metrics in metrics.ts, upload-grant scoping in grants.ts, and errors map to
 * HTTP in one place (shared/http/errors.ts).
 */
import { join } from "node:path";
import { type Context, Hono } from "hono";
import { type ErrorMappingOptions, onError, routeNotFound } from "../../shared/http/errors.js";
import { createLogger } from "../../shared/http/logger.js";
import { requestId } from "../../shared/http/request-id.js";
import { requestLog } from "../../shared/http/request-log.js";
import { declaredLengthLimit, signatureAuth } from "../../shared/http/signature.js";
import { LIMITS } from "../../shared/protocol.js";
import { BlockService } from "../blocks/block-service.js";
import { Solver } from "../solve/solver.js";
import { accessAuth } from "./access.js";
import type { GpuAppOptions, GpuEnv, ServerContext, ServerLimits } from "./context.js";
import { RequestTracker } from "./drain.js";
import { ForegroundGate } from "./foreground.js";
import { UploadGrants } from "./grants.js";
import { ImportSessions } from "./imports.js";
import { GpuMetrics } from "./metrics.js";
import { NonceLog } from "./nonce-log.js";
import { AdmissionQueue } from "./queue.js";
import { blockRoutes } from "./routes/blocks.js";
import { generationRoutes } from "./routes/generation.js";
import { healthRoute, metricsRoute } from "./routes/health.js";
import { importRoutes } from "./routes/imports.js";
import { sandboxRoutes } from "./routes/sandbox.js";
import { storageFailure } from "./storage-errors.js";
import { StorageState } from "./storage-state.js";
import { ModelWork } from "./work.js";

export type { GpuAppOptions, SandboxRunner, ServerLimits } from "./context.js";

/** The app plus the handles its runtime entry needs to drain and stop it. */
export interface GpuApp {
  app: Hono<GpuEnv>;
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

const CHUNK_ROUTE = /^\/v1\/imports\/[^/]+\/chunks\/[^/]+$/;

/** The limits in force: the options' over the defaults. */
function serverLimits(options: GpuAppOptions): ServerLimits {
  const concurrency = options.limits?.concurrency ?? options.blocks.snapshot().slots.total;
  return {
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
}

/** The secrets a signature or upload grant may use: the current one, and the previous one during a rotation. */
const acceptedSecrets = (options: GpuAppOptions): string[] =>
  options.previousSecret ? [options.secret, options.previousSecret] : [options.secret];

/** The parts of the app, wired together. */
function serverContext(
  options: GpuAppOptions,
  errorMapping: ErrorMappingOptions,
  storage: StorageState,
): ServerContext {
  const { blocks } = options;
  const limits = serverLimits(options);
  const queue = new AdmissionQueue(limits.concurrency, limits.maxWaiting, limits.retryAfterS);
  const foreground = new ForegroundGate();
  const imports = new ImportSessions(
    join(options.dataDir, "imports"),
    {
      maxSessions: limits.maxImports,
      maxBytes: limits.maxImportBytes,
      idleTimeoutMs: limits.importIdleTimeoutMs,
    },
    { ...options.fingerprints, hasBlock: (sha) => blocks.list().some((m) => m.sha256 === sha) },
  );
  const tracker = new RequestTracker(limits.retryAfterS);
  const metrics = new GpuMetrics({
    blocks,
    queue,
    foreground,
    imports,
    tracker,
    ...(options.vram ? { vram: options.vram } : {}),
  });
  const solver =
    options.solver ??
    (options.sandbox && blocks instanceof BlockService
      ? new Solver(blocks.engine, blocks.pool, options.sandbox)
      : undefined);
  return {
    options,
    blocks,
    limits,
    queue,
    work: new ModelWork({ queue, foreground, limits, tracker, metrics, errorMapping }),
    tracker,
    metrics,
    imports,
    grants: new UploadGrants(acceptedSecrets(options)),
    solver,
    noSandbox: options.sandboxUnavailable ?? "disabled",
    started: Date.now(),
    storage,
  };
}

/** Builds the GPU node's app. */
export function createGpuApp(options: GpuAppOptions): GpuApp {
  const logger = options.logger ?? createLogger();
  const nonces = NonceLog.open(join(options.dataDir, "nonces.log"));
  const storage = new StorageState(options.dataDir, nonces);
  const errorMapping: ErrorMappingOptions = {
    logger,
    // A write the disk refused is remembered for /health.
    translate: (err) => {
      const failure = storageFailure(err);
      if (failure) storage.failed(failure);
      return failure;
    },
  };
  const ctx = serverContext(options, errorMapping, storage);
  const app = new Hono<GpuEnv>();
  app.onError(onError(errorMapping));
  app.notFound(routeNotFound("not_found"));

  // Outermost: request id (the edge's, passed on), the request's log line, request metrics, the
  // client signal and the in-flight count; health probes and scrapes are neither logged at info
  // nor counted in flight.
  const probe = (c: Context) => c.req.path === "/health" || c.req.path === "/metrics";
  app.use("*", requestId({ acceptIncoming: true }));
  app.use("*", requestLog(logger, { skip: probe }));
  app.use("*", ctx.metrics.middleware());
  app.use("*", async (c, next) => {
    c.set("clientSignal", c.req.raw.signal);
    await next();
  });
  app.use(
    "*",
    ctx.tracker.middleware((c) => !probe(c)),
  );
  // A declared length over the bound is refused here; bodies are read only after authentication.
  const maxBody = (c: Context) =>
    c.req.method === "PUT" && CHUNK_ROUTE.test(c.req.path) ? LIMITS.importChunkBytes : ctx.limits.bodyBytes;
  app.use("*", declaredLengthLimit(maxBody));

  healthRoute(app, ctx);
  // Everything but /health (unknown paths too) needs Access (when configured) and a signature
  // or, on the import routes, an upload grant.
  const open = (c: Context) => c.req.path === "/health";
  const access = options.access ? accessAuth(options.access) : undefined;
  if (access) app.use("*", (c, next) => (open(c) ? next() : access(c, next)));
  const signature = signatureAuth({
    secret: acceptedSecrets(options),
    nonces,
    // An earlier process on this data dir may have accepted signatures up to then unpersisted.
    ...(nonces.notBeforeS !== undefined ? { notBeforeS: nonces.notBeforeS } : {}),
    maxBodyBytes: maxBody,
    ...(options.maxSkewS !== undefined ? { maxSkewS: options.maxSkewS } : {}),
  });
  const authenticate = ctx.grants.middleware(signature, maxBody);
  app.use("*", (c, next) => (open(c) ? next() : authenticate(c, next)));

  metricsRoute(app, ctx);
  blockRoutes(app, ctx);
  generationRoutes(app, ctx);
  importRoutes(app, ctx);
  sandboxRoutes(app, ctx);

  return {
    app,
    queue: ctx.queue,
    get draining() {
      return ctx.tracker.draining;
    },
    get inFlight() {
      return ctx.tracker.inFlight;
    },
    drain: () => ctx.tracker.drain(),
    waitIdle: (timeoutMs) => ctx.tracker.waitIdle(ctx.queue, timeoutMs),
    abortAll: () => ctx.work.abortAll(),
    close: () => ctx.imports.close(),
  };
}
