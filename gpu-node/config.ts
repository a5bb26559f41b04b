/**
 * GPU-node configuration, validated once at start with zod. This is the only module of the GPU
 * node that reads the environment (a lint rule keeps it so).
 */
import { delimiter } from "node:path";
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
