/**
 * Edge configuration, validated once at start with zod. This is the only edge module that reads
 * the environment (Node) or the Worker's bindings: the entries hand it `process.env` or the
 * Worker `env` object, and everything else takes the parsed `EdgeConfig`.
 */
import { z } from "zod";
import type { BucketAccess } from "../shared/bucket-keys.js";
import { intSetting as int, logLevelSetting, parseEnv } from "../shared/http/config.js";
import type { LogLevel } from "../shared/http/logger.js";
import { LIMITS } from "../shared/protocol.js";
import type { WorkersRateLimitBinding } from "./rate-limit.js";

const optionalString = z.string().min(1).optional();

const envSchema = z
  .object({
    /** libSQL database: `file:path.db` (Node), `libsql://...` or `https://...` (Node and Workers). */
    LIBSQL_URL: z.string().min(1, "LIBSQL_URL is required"),
    LIBSQL_AUTH_TOKEN: optionalString,
    /** Base URL the edge calls the GPU node on (a tunnel hostname in production, loopback locally). */
    KVGRAFT_GPU_URL: z.url().optional(),
    /** Base URL clients use to reach the GPU node's import endpoints (upload grants); default the above. */
    KVGRAFT_GPU_PUBLIC_URL: z.url().optional(),
    /** Shared secret for signed edge-to-GPU requests and upload grants. */
    KVGRAFT_GPU_SECRET: z.string().min(16, "must be at least 16 characters").optional(),
    /** The secret KVGRAFT_GPU_SECRET replaces: heartbeats signed with it are still accepted during a rotation. */
    KVGRAFT_GPU_SECRET_PREVIOUS: z.string().min(16, "must be at least 16 characters").optional(),
    /**
     * A Cloudflare Access service token (both or neither): sent as CF-Access-Client-Id and
     * CF-Access-Client-Secret on every call to a GPU node, which Access in front of the node's
     * tunnel requires. Secrets in production (`wrangler secret put`).
     */
    KVGRAFT_ACCESS_CLIENT_ID: optionalString,
    KVGRAFT_ACCESS_CLIENT_SECRET: optionalString,
    /** An admin key to install at start (`kvg_<8>_<32+>`); without it one is generated once. */
    KVGRAFT_ADMIN_KEY: optionalString,
    /** Timeout of one GPU call (graft, generate, deposit, sandbox run). */
    KVGRAFT_GPU_TIMEOUT_MS: int(100, 600_000, 120_000),
    /** Timeout of the health checks of the GPU node and the database (/health waits at most this long). */
    KVGRAFT_GPU_HEALTH_TIMEOUT_MS: int(50, 60_000, 2_000),
    /** Requests per API key and period. */
    KVGRAFT_RATE_LIMIT: int(1, 1_000_000, 120),
    /** The rate-limit period; the Workers binding supports 10 or 60. */
    KVGRAFT_RATE_PERIOD_S: int(1, 3600, 60),
    /** Largest request body on the public API, in bytes. */
    KVGRAFT_MAX_BODY_BYTES: int(256, 16 * 2 ** 20, 64 * 1024),
    /** Largest request body on the admin API, in bytes. */
    KVGRAFT_ADMIN_MAX_BODY_BYTES: int(1024, 64 * 2 ** 20, 2 * 2 ** 20),
    /** Most tokens one solve may generate on the GPU node (requests asking for more are capped). */
    KVGRAFT_SOLVE_MAX_TOKENS: int(1, LIMITS.maxTokens, 256),
    /** Lifetime of an upload grant. */
    KVGRAFT_UPLOAD_GRANT_TTL_S: int(30, 86_400, 900),
    /**
     * The GPU nodes' block bucket (path-style URL, as on the nodes) and a token that may write to
     * it: with them, an upload grant also carries presigned PUT URLs into the bucket's `uploads/`.
     */
    KVGRAFT_BUCKET_URL: z.url({ protocol: /^https?$/ }).optional(),
    KVGRAFT_BUCKET_ACCESS_KEY_ID: optionalString,
    KVGRAFT_BUCKET_SECRET_ACCESS_KEY: optionalString,
    KVGRAFT_BUCKET_REGION: z.string().min(1).default("auto"),
    /** Id the configured GPU node is recorded under in the block table. */
    KVGRAFT_GPU_NODE_ID: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/)
      .default("default"),
    /** What the logger writes: debug, info (default; a line per request), warn, error or silent. */
    KVGRAFT_LOG_LEVEL: logLevelSetting,
    /**
     * The flywheel (unsure answers queued and solved again with a bigger budget): `on`, `off`, or
     * `auto`: off when the model is the generated random-weight one (its answers are noise, so
     * the work would be wasted), on otherwise.
     */
    KVGRAFT_FLYWHEEL: z.enum(["on", "off", "auto"]).default("auto"),
    /** How often an idle flywheel worker looks at the queue again. */
    KVGRAFT_FLYWHEEL_IDLE_MS: int(1, 600_000, 2_000),
  })
  .superRefine((env, ctx) => {
    if (env.KVGRAFT_GPU_URL && !env.KVGRAFT_GPU_SECRET)
      ctx.addIssue({
        code: "custom",
        path: ["KVGRAFT_GPU_SECRET"],
        message: "KVGRAFT_GPU_SECRET is required when KVGRAFT_GPU_URL is set",
      });
    if (!env.KVGRAFT_ACCESS_CLIENT_ID !== !env.KVGRAFT_ACCESS_CLIENT_SECRET)
      ctx.addIssue({
        code: "custom",
        path: [env.KVGRAFT_ACCESS_CLIENT_ID ? "KVGRAFT_ACCESS_CLIENT_SECRET" : "KVGRAFT_ACCESS_CLIENT_ID"],
        message:
          "KVGRAFT_ACCESS_CLIENT_ID and KVGRAFT_ACCESS_CLIENT_SECRET go together (a Cloudflare Access service token)",
      });
    if (env.KVGRAFT_BUCKET_URL)
      for (const key of ["KVGRAFT_BUCKET_ACCESS_KEY_ID", "KVGRAFT_BUCKET_SECRET_ACCESS_KEY"] as const)
        if (!env[key])
          ctx.addIssue({
            code: "custom",
            path: [key],
            message: `${key} is required with KVGRAFT_BUCKET_URL`,
          });
  });

/** The edge's validated configuration. */
export interface EdgeConfig {
  db: { url: string; authToken?: string };
  gpu: {
    /** Null: no GPU node configured (the edge answers from the library only). */
    url: string | null;
    publicUrl: string | null;
    secret: string | null;
    /** Also accepted on heartbeats during a rotation; never used to sign. */
    previousSecret: string | null;
    nodeId: string;
    timeoutMs: number;
    healthTimeoutMs: number;
    /** Headers sent on every call to a GPU node: the Access service token, or none. */
    headers: Record<string, string>;
  };
  adminKey?: string;
  rateLimit: { limit: number; periodS: number };
  limits: { publicBodyBytes: number; adminBodyBytes: number; solveMaxTokens: number };
  /** Upload grants; `bucket`: where presigned uploads go (null: uploads go to the node only). */
  uploads: { grantTtlS: number; bucket: BucketAccess | null };
  logLevel: LogLevel;
  flywheel: {
    /** Whether unsure answers are queued and a worker (npm start) solves them again. */
    enabled: boolean;
    /** The setting it came from (`auto`: decided by whether the model is the generated one). */
    setting: "on" | "off" | "auto";
    idleMs: number;
  };
}

/** What the entry knows about the deployment beyond the environment. */
export interface EdgeContext {
  /**
   * True when the GPU node runs the generated random-weight model (`kvgraft start` without
   * MODEL_PATH): `KVGRAFT_FLYWHEEL=auto` is off then. Unknown (a Worker, `serve edge`): a real model.
   */
  syntheticModel?: boolean;
}

/** What the configuration errors call it: `invalid edge configuration: ...`. */
const WHAT = "edge configuration";

/**
 * Parses the environment (Node: `process.env`; Workers: the `env` object, whose non-string
 * bindings are ignored here). Empty strings count as unset.
 */
export function readEdgeConfig(env: Record<string, unknown>, context: EdgeContext = {}): EdgeConfig {
  const e = parseEnv(envSchema, env, WHAT);
  const trim = (url: string) => url.replace(/\/+$/, "");
  return {
    db: { url: e.LIBSQL_URL, ...(e.LIBSQL_AUTH_TOKEN ? { authToken: e.LIBSQL_AUTH_TOKEN } : {}) },
    gpu: {
      url: e.KVGRAFT_GPU_URL ? trim(e.KVGRAFT_GPU_URL) : null,
      publicUrl: trim(e.KVGRAFT_GPU_PUBLIC_URL ?? e.KVGRAFT_GPU_URL ?? "") || null,
      secret: e.KVGRAFT_GPU_SECRET ?? null,
      previousSecret: e.KVGRAFT_GPU_SECRET_PREVIOUS ?? null,
      nodeId: e.KVGRAFT_GPU_NODE_ID,
      timeoutMs: e.KVGRAFT_GPU_TIMEOUT_MS,
      healthTimeoutMs: e.KVGRAFT_GPU_HEALTH_TIMEOUT_MS,
      headers:
        e.KVGRAFT_ACCESS_CLIENT_ID && e.KVGRAFT_ACCESS_CLIENT_SECRET
          ? {
              "CF-Access-Client-Id": e.KVGRAFT_ACCESS_CLIENT_ID,
              "CF-Access-Client-Secret": e.KVGRAFT_ACCESS_CLIENT_SECRET,
            }
          : {},
    },
    ...(e.KVGRAFT_ADMIN_KEY ? { adminKey: e.KVGRAFT_ADMIN_KEY } : {}),
    rateLimit: { limit: e.KVGRAFT_RATE_LIMIT, periodS: e.KVGRAFT_RATE_PERIOD_S },
    limits: {
      publicBodyBytes: e.KVGRAFT_MAX_BODY_BYTES,
      adminBodyBytes: e.KVGRAFT_ADMIN_MAX_BODY_BYTES,
      solveMaxTokens: e.KVGRAFT_SOLVE_MAX_TOKENS,
    },
    uploads: {
      grantTtlS: e.KVGRAFT_UPLOAD_GRANT_TTL_S,
      bucket:
        e.KVGRAFT_BUCKET_URL && e.KVGRAFT_BUCKET_ACCESS_KEY_ID && e.KVGRAFT_BUCKET_SECRET_ACCESS_KEY
          ? {
              url: trim(e.KVGRAFT_BUCKET_URL),
              accessKeyId: e.KVGRAFT_BUCKET_ACCESS_KEY_ID,
              secretAccessKey: e.KVGRAFT_BUCKET_SECRET_ACCESS_KEY,
              region: e.KVGRAFT_BUCKET_REGION,
            }
          : null,
    },
    logLevel: e.KVGRAFT_LOG_LEVEL,
    flywheel: {
      enabled: e.KVGRAFT_FLYWHEEL === "auto" ? context.syntheticModel !== true : e.KVGRAFT_FLYWHEEL === "on",
      setting: e.KVGRAFT_FLYWHEEL,
      idleMs: e.KVGRAFT_FLYWHEEL_IDLE_MS,
    },
  };
}

/** Name of the Workers rate-limiting binding (see wrangler.toml). */
export const RATE_LIMIT_BINDING = "RATE_LIMITER";

/** The Workers rate-limiting binding, or null when the Worker has none. */
export function rateLimitBinding(env: Record<string, unknown>): WorkersRateLimitBinding | null {
  const binding = env[RATE_LIMIT_BINDING];
  if (binding && typeof (binding as { limit?: unknown }).limit === "function")
    return binding as WorkersRateLimitBinding;
  return null;
}

/** The process environment where there is one (Node); empty in runtimes without it. */
export function processEnv(): Record<string, string | undefined> {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ?? {};
}

const listenSchema = z.object({
  EDGE_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
  PORT: z.coerce.number().int().min(0).max(65_535).optional(),
  EDGE_HOST: z.string().min(1).default("127.0.0.1"),
});

/** Where the Node entry listens: `EDGE_PORT`, else `PORT`, else 8787; `EDGE_HOST` (default loopback). */
export function readListenConfig(env: Record<string, string | undefined>): { port: number; host: string } {
  const e = parseEnv(listenSchema, env, WHAT);
  return { port: e.EDGE_PORT ?? e.PORT ?? 8787, host: e.EDGE_HOST };
}

/** Cluster settings of the GPU pool (every one has a default). */
export interface PoolSettings {
  /** Copies of each block (R). */
  replicas: number;
  /** The heartbeat interval nodes are expected to keep. */
  heartbeatMs: number;
  /** Heartbeats missed in a row before a node counts as down. */
  downAfter: number;
  /** Block copies running at once during a rebalance. */
  transferConcurrency: number;
  /** A full rebalance runs at least this often (0: only on membership changes and on request). */
  rebalanceIntervalMs: number;
}

const poolSchema = z.object({
  KVGRAFT_REPLICAS: int(1, 16, 2),
  KVGRAFT_HEARTBEAT_MS: int(50, 600_000, 2_000),
  KVGRAFT_HEARTBEAT_DOWN_AFTER: int(1, 100, 3),
  KVGRAFT_TRANSFER_CONCURRENCY: int(1, 64, 2),
  KVGRAFT_REBALANCE_INTERVAL_MS: int(0, 86_400_000, 30_000),
});

/** Reads the GPU pool's cluster settings from the environment record the entry hands the edge. */
export function readPoolSettings(env: Record<string, unknown>): PoolSettings {
  const e = parseEnv(poolSchema, env, WHAT);
  return {
    replicas: e.KVGRAFT_REPLICAS,
    heartbeatMs: e.KVGRAFT_HEARTBEAT_MS,
    downAfter: e.KVGRAFT_HEARTBEAT_DOWN_AFTER,
    transferConcurrency: e.KVGRAFT_TRANSFER_CONCURRENCY,
    rebalanceIntervalMs: e.KVGRAFT_REBALANCE_INTERVAL_MS,
  };
}
