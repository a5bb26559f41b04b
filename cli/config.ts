/**
 * The environment as the command-line tools read it: the one cli/ module that touches
 * `process.env` (the edge and the GPU node read theirs in edge/config.ts and gpu-node/config.ts,
 * from what the tools hand them). Empty strings count as unset.
 */
import { z } from "zod";
import { parseEnv } from "../shared/http/config.js";

/**
 * The variables only the tools read (`kvgraft start`, `bench edge`), declared once; the services'
 * variables the tools also read are the services' (edge/config.ts, gpu-node/config.ts).
 */
export const toolEnvSchema = z.object({
  KVGRAFT_DATA_DIR: z
    .string()
    .min(1)
    .default(".data")
    .describe("where `kvgraft start` keeps the blocks, database, admin key and log (`--data-dir` wins)"),
  GPU_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65_535)
    .default(8788)
    .describe("the port `kvgraft start` gives its GPU node (loopback only)"),
  KVGRAFT_API_KEY: z
    .string()
    .min(1)
    .optional()
    .describe("a key for calling an edge (`bench edge --url`; default `KVGRAFT_ADMIN_KEY`)"),
  UV_THREADPOOL_SIZE: z
    .string()
    .optional()
    .describe(
      "Node's own: libuv pool threads, which run the engine build's chunk reads, hashes and state transfers; `kvgraft start` gives its GPU node 16 unless it is set; 16 on the GPU machine",
    ),
});

/** The variables `kvgraft start`, `bench edge` and `flywheel` read for themselves. */
export interface ToolEnv {
  /** KVGRAFT_DATA_DIR: where `kvgraft start` keeps its data. */
  dataDir: string;
  /** GPU_PORT: the port `kvgraft start` gives the GPU node. */
  gpuPort: number;
  /** MODEL_PATH: a GGUF model instead of the embedded one. */
  modelPath?: string;
  /** KVGRAFT_GPU_URL: the GPU node the flywheel worker calls. */
  gpuUrl?: string;
  /** KVGRAFT_GPU_SECRET: the shared secret of signed requests. */
  gpuSecret?: string;
  /** LIBSQL_URL: the edge's database. */
  libsqlUrl?: string;
  /** KVGRAFT_ADMIN_KEY: an admin key to install (and to use where a key is needed). */
  adminKey?: string;
  /** KVGRAFT_API_KEY: a key for calling an edge. */
  apiKey?: string;
}

/** The whole process environment, copied: what child processes inherit and what the services' configs parse. */
export function inheritedEnv(): Record<string, string | undefined> {
  return { ...process.env };
}

/** The variables the tools read, from the process environment (a ConfigError names a bad one). */
export function readToolEnv(env: Record<string, string | undefined> = process.env): ToolEnv {
  const own = parseEnv(toolEnvSchema, env);
  const pick = (key: keyof ToolEnv, name: string) => (env[name] ? { [key]: env[name] } : {});
  return {
    dataDir: own.KVGRAFT_DATA_DIR,
    gpuPort: own.GPU_PORT,
    ...(own.KVGRAFT_API_KEY ? { apiKey: own.KVGRAFT_API_KEY } : {}),
    ...pick("modelPath", "MODEL_PATH"),
    ...pick("gpuUrl", "KVGRAFT_GPU_URL"),
    ...pick("gpuSecret", "KVGRAFT_GPU_SECRET"),
    ...pick("libsqlUrl", "LIBSQL_URL"),
    ...pick("adminKey", "KVGRAFT_ADMIN_KEY"),
  };
}
