/** `GET /health`: the edge, its database and the GPU node. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { z } from "zod";
import { type Database, pingDatabase, probeWrite } from "../db/database.js";
import type { DatabaseWrites } from "../db/write-state.js";
import type { AppEnv, Deps } from "../http.js";
import { healthResponseSchema } from "../ops-schemas.js";
import { ok, routeGroup, serve, serviceRoute } from "./documented.js";

type HealthResponse = z.infer<typeof healthResponseSchema>;

/**
 * Checks the database (`SELECT 1`, then whether it takes a write: database.ts `probeWrite`, and no
 * write refused for storage in the last minute) and the GPU node (its /health) in parallel, each
 * step bounded by KVGRAFT_GPU_HEALTH_TIMEOUT_MS; a probe write still waiting then (another write
 * holds the lock) leaves `writable` unknown (absent, `writeError: probe_timeout`).
 * `ok`: both answer, the database is writable and the GPU node runs programs; `degraded`: the
 * database answers but refuses writes (library answers still work, deposits and new keys do not),
 * the GPU node runs no programs (`gpu.sandbox.isolation` none with its reason: deposits, transfers
 * and the model's solves answer 501), or the GPU node does not answer (or none is configured),
 * HTTP 200; `down`: the database does not answer, HTTP 503.
 */
export async function checkHealth(deps: Deps): Promise<HealthResponse> {
  const timed = async <T>(fn: () => Promise<T>) => {
    const t0 = deps.clock.monotonicMs();
    try {
      const value = await fn();
      return { ok: true as const, value, ms: round(deps.clock.monotonicMs() - t0) };
    } catch (err) {
      return { ok: false as const, error: describe(err), ms: round(deps.clock.monotonicMs() - t0) };
    }
  };
  const [db, gpu] = await Promise.all([
    timed(async () => {
      await withTimeout(pingDatabase(deps.db), deps.config.gpu.healthTimeoutMs, "db_timeout");
      return writability(deps.db, deps.writes, deps.config.gpu.healthTimeoutMs);
    }),
    deps.gpu.configured ? timed(() => deps.gpu.health()) : null,
  ]);
  const gpuPart: HealthResponse["gpu"] =
    gpu === null
      ? { status: "not_configured", ms: null }
      : gpu.ok
        ? {
            status: gpu.value.status,
            ms: gpu.ms,
            model: gpu.value.model.name,
            slots: gpu.value.slots,
            // A node that cannot persist is `degraded`; its storage says why.
            ...(gpu.value.storage ? { storage: gpu.value.storage } : {}),
            ...(gpu.value.sandbox ? { sandbox: gpu.value.sandbox } : {}),
          }
        : { status: "down", ms: gpu.ms, error: gpu.error };
  const runsPrograms = gpuPart.sandbox?.isolation !== "none";
  const status = !db.ok
    ? "down"
    : gpuPart.status === "ok" && runsPrograms && db.value.writable !== false
      ? "ok"
      : "degraded";
  return {
    status,
    edge: {
      status: "ok",
      runtime: deps.runtime,
      uptimeS: Math.round((deps.clock.now() - deps.startedAt) / 1000),
    },
    db: {
      ...(db.ok ? { status: "ok", ms: db.ms, ...db.value } : { status: "down", ms: db.ms, error: db.error }),
      droppedLogLines: deps.writes.droppedLogLines,
    },
    gpu: gpuPart,
  };
}

const healthRoute = serviceRoute({
  method: "get",
  path: "/health",
  summary: "Edge, database and GPU node state (ok | degraded: 200; down: 503)",
  responses: {
    200: ok(healthResponseSchema),
    503: ok(healthResponseSchema, "The database is unreachable."),
  },
});

export function healthRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const app = routeGroup();
  serve(app, healthRoute, async (c) => {
    const health = await checkHealth(deps);
    return c.json(health, health.status === "down" ? 503 : 200);
  });
  return app;
}

/**
 * Whether the database takes a write: its probe write, then a real write refused for storage in
 * the last minute (`writeError` names the condition, `refusedAgoS` when it was).
 */
async function writability(
  db: Database,
  writes: DatabaseWrites,
  timeoutMs: number,
): Promise<{ writable?: boolean; writeError?: string; refusedAgoS?: number }> {
  try {
    const probed = await withTimeout(probeWrite(db), timeoutMs, "probe_timeout");
    if (probed === "page_limit") return { writable: false, writeError: "database_full" };
  } catch (err) {
    if ((err as { code?: unknown }).code === "probe_timeout") return { writeError: "probe_timeout" };
    return { writable: false, writeError: writes.refused(err) ?? describe(err) };
  }
  const refusal = writes.recentRefusal();
  return refusal
    ? { writable: false, writeError: refusal.condition, refusedAgoS: refusal.agoS }
    : { writable: true };
}

/** A one-line reason: an error's code, else its cause's message (drizzle wraps driver errors). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") return code;
  const cause = err.cause instanceof Error ? err.cause.message : err.message;
  return cause.split("\n")[0]?.slice(0, 200) ?? "error";
}

/** Rejects with an Error whose code is `code` when `promise` takes longer than `ms`. */
function withTimeout<T>(promise: Promise<T>, ms: number, code: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code })), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
