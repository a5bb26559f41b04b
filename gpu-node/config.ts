/**
 * GPU-node configuration, validated once at start with zod. This is the only module of the GPU
 * node that reads the environment (a lint rule keeps it so).
 */
import { delimiter } from "node:path";
import { z } from "zod";
import { logLevelSetting, parseEnv } from "../shared/http/config.js";
import type { BucketConfig } from "./blocks/bucket/bucket.js";
import { SANDBOX_CHOICES } from "./sandbox/choices.js";

const envSchema = z.object({
  /** `lastBuild` loads the CUDA build installed on the GPU machine; `cpu` (default) the CPU build. */
  KV_LLAMA: z.enum(["cpu", "lastBuild", "auto"]).default("cpu"),
  /** llama.cpp threads; defaults to the available parallelism. */
  KV_THREADS: z.coerce.number().int().positive().optional(),
  /** Shared secret for signed edge-to-GPU requests. */
  KVGRAFT_GPU_SECRET: z.string().min(16, "must be at least 16 characters").optional(),
  /** The secret KVGRAFT_GPU_SECRET replaces: still accepted during a rotation (docs/deploy.md). */
  KVGRAFT_GPU_SECRET_PREVIOUS: z.string().min(16, "must be at least 16 characters").optional(),
  /** A real GGUF model; without it the embedded default generates a tiny random-weight model. */
  MODEL_PATH: z.string().min(1).optional(),
  /** Cloudflare Access application audience (AUD tag); with the team domain, requests need an Access JWT. */
  KVGRAFT_ACCESS_AUD: z.string().min(1).optional(),
  /** Cloudflare Access team domain, e.g. https://team.cloudflareaccess.com (issuer and key host). */
  KVGRAFT_ACCESS_TEAM_DOMAIN: z.url().optional(),
  /** The edge this node registers with and sends heartbeats to. */
  KVGRAFT_EDGE_URL: z.url().optional(),
  /** A fixed node id (otherwise one is kept in the data folder). */
  KVGRAFT_NODE_ID: z.string().min(1).optional(),
  /** The URL the edge should use to reach this node, when it differs from the listening address. */
  KVGRAFT_PUBLIC_URL: z.url().optional(),
  /** Least severe log level written: debug, info (default), warn, error, silent. */
  KVGRAFT_LOG_LEVEL: logLevelSetting,
  /**
   * Where programs run (gpu-node/sandbox): `auto` (default) and `wasm` CPython on WebAssembly,
   * installed by npm; `bwrap` the host's python3 under bubblewrap, which must be installed.
   */
  KVGRAFT_SANDBOX: z.enum(SANDBOX_CHOICES, { error: "must be auto, wasm or bwrap" }).default("auto"),
  /**
   * The durable block bucket, path-style: an S3-compatible endpoint and the bucket name, e.g.
   * https://<account>.r2.cloudflarestorage.com/kvgraft-blocks. Unset: blocks live on local disk only.
   */
  KVGRAFT_BUCKET_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Access key id of the bucket's API token (R2: an R2 API token's access key id). */
  KVGRAFT_BUCKET_ACCESS_KEY_ID: z.string().min(1).optional(),
  KVGRAFT_BUCKET_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** SigV4 region of the bucket; R2 takes `auto` (the default). */
  KVGRAFT_BUCKET_REGION: z.string().min(1).default("auto"),
  /** Ranged GETs in flight when a block is fetched from the bucket (default 4). */
  KVGRAFT_BUCKET_FETCH_PARALLEL: z.coerce.number().int().min(1).max(64).optional(),
  /** Block states larger than this are uploaded in parts (default 4 GiB, under R2's ~5 GiB single PUT). */
  KVGRAFT_BUCKET_MULTIPART_THRESHOLD_BYTES: z.coerce.number().int().positive().optional(),
  /** Part size of multipart uploads (default 64 MiB); S3 and R2 require at least 5 MiB. */
  KVGRAFT_BUCKET_PART_BYTES: z.coerce
    .number()
    .int()
    .min(5 * 2 ** 20, "must be at least 5 MiB (5242880), the S3 minimum part size")
    .optional(),
  /**
   * With a bucket: bytes of block files kept on local disk; past it, the least recently used
   * blocks that are safe in the bucket are deleted locally. Unset: no limit.
   */
  KVGRAFT_DISK_BUDGET_BYTES: z.coerce.number().int().positive().optional(),
  /**
   * Warm start: `on` (default) fills the warm tier from the local block store after each start,
   * most recently used first; `off` leaves it empty until grafts fill it.
   */
  KVGRAFT_WARM_START: z.enum(["on", "off"], { error: "must be on or off" }).default("on"),
  /** Bytes of block state the warm tier holds in RAM (pinned on our engine build); 0 turns it off. Default 2 GiB. */
  KVGRAFT_WARM_BUDGET_BYTES: z.coerce.number().int().nonnegative().optional(),
});

const envSchemaChecked = envSchema.superRefine((env, ctx) => {
  if (!env.KVGRAFT_BUCKET_URL) return;
  for (const key of ["KVGRAFT_BUCKET_ACCESS_KEY_ID", "KVGRAFT_BUCKET_SECRET_ACCESS_KEY"] as const)
    if (!env[key])
      ctx.addIssue({ code: "custom", path: [key], message: "is required with KVGRAFT_BUCKET_URL" });
  if (new URL(env.KVGRAFT_BUCKET_URL).pathname.replace(/\/+$/, "") === "")
    ctx.addIssue({
      code: "custom",
      path: ["KVGRAFT_BUCKET_URL"],
      message: "must end with the bucket name (path-style: <endpoint>/<bucket>)",
    });
});

export type GpuEnv = z.infer<typeof envSchema>;

/** Parses the environment (empty variables unset); throws a ConfigError listing every invalid variable. */
export function readGpuEnv(env: Record<string, string | undefined> = process.env): GpuEnv {
  return parseEnv(envSchemaChecked, env);
}

/** The block bucket the environment names, or undefined when none is configured. */
export function bucketConfig(env: GpuEnv): BucketConfig | undefined {
  if (!env.KVGRAFT_BUCKET_URL || !env.KVGRAFT_BUCKET_ACCESS_KEY_ID || !env.KVGRAFT_BUCKET_SECRET_ACCESS_KEY)
    return undefined;
  return {
    url: env.KVGRAFT_BUCKET_URL,
    accessKeyId: env.KVGRAFT_BUCKET_ACCESS_KEY_ID,
    secretAccessKey: env.KVGRAFT_BUCKET_SECRET_ACCESS_KEY,
    region: env.KVGRAFT_BUCKET_REGION,
    fetchParallel: env.KVGRAFT_BUCKET_FETCH_PARALLEL,
    multipartThresholdBytes: env.KVGRAFT_BUCKET_MULTIPART_THRESHOLD_BYTES,
    partBytes: env.KVGRAFT_BUCKET_PART_BYTES,
  };
}

/** Directories of the executable search path (`PATH`), in order, read when called. */
export function executableSearchPath(env: Record<string, string | undefined> = process.env): string[] {
  return (env.PATH ?? "").split(delimiter).filter((dir) => dir !== "");
}

/**
 * The environment a helper process of the node starts with: the node's own (a GPU build may need
 * its library paths), less the node's secrets and settings (`KVGRAFT_*`).
 */
export function childProcessEnv(
  env: Record<string, string | undefined> = process.env,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !k.startsWith("KVGRAFT_")) out[k] = v;
  return out;
}
