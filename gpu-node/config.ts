/**
 * GPU-node configuration, validated once at start with zod. This is the only module of the GPU
 * node that reads the environment.
 */
import { z } from "zod";
import { logLevelSetting, parseEnv } from "../shared/http/config.js";

const envSchema = z.object({
  /** `lastBuild` loads the CUDA build installed on the GPU machine; `cpu` (default) the CPU build. */
  KV_LLAMA: z.enum(["cpu", "lastBuild", "auto"]).default("cpu"),
  /** llama.cpp threads; defaults to the available parallelism. */
  KV_THREADS: z.coerce.number().int().positive().optional(),
  /** Shared secret for signed edge-to-GPU requests. */
  KVGRAFT_GPU_SECRET: z.string().min(16, "KVGRAFT_GPU_SECRET must be at least 16 characters").optional(),
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
});

export type GpuEnv = z.infer<typeof envSchema>;

/** Parses the environment (empty variables unset); throws a ConfigError listing every invalid variable. */
export function readGpuEnv(env: Record<string, string | undefined> = process.env): GpuEnv {
  return parseEnv(envSchema, env);
}
