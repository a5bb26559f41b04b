/**
 * The environment as the command-line tools read it: the one cli/ module that touches
 * `process.env` (the edge and the GPU node read theirs in edge/config.ts and gpu-node/config.ts,
 * from what the tools hand them). Empty strings count as unset.
 */

/** The variables `kvgraft start`, `bench edge` and `flywheel` read for themselves. */
export interface ToolEnv {
  /** KVGRAFT_DATA_DIR: where `kvgraft start` keeps its data (default .data). */
  dataDir?: string;
  /** GPU_PORT: the port `kvgraft start` gives the GPU node. */
  gpuPort?: string;
  /** MODEL_PATH: a GGUF model instead of the generated tiny one. */
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

/** The whole process environment, copied: what child processes inherit and what the edge config parses. */
export function inheritedEnv(): Record<string, string | undefined> {
  return { ...process.env };
}

/** The variables the tools read, from the process environment. */
export function readToolEnv(env: Record<string, string | undefined> = process.env): ToolEnv {
  const set = (name: string) => (env[name] ? { value: env[name] } : null);
  const pick = (key: keyof ToolEnv, name: string) => {
    const v = set(name);
    return v ? { [key]: v.value } : {};
  };
  return {
    ...pick("dataDir", "KVGRAFT_DATA_DIR"),
    ...pick("gpuPort", "GPU_PORT"),
    ...pick("modelPath", "MODEL_PATH"),
    ...pick("gpuUrl", "KVGRAFT_GPU_URL"),
    ...pick("gpuSecret", "KVGRAFT_GPU_SECRET"),
    ...pick("libsqlUrl", "LIBSQL_URL"),
    ...pick("adminKey", "KVGRAFT_ADMIN_KEY"),
    ...pick("apiKey", "KVGRAFT_API_KEY"),
  };
}
