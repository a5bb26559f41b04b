import { type GpuEnv, readGpuEnv } from "../gpu-node/config.js";
import { UserError } from "./args.js";

/**
 * The GPU node's environment (KV_LLAMA, KV_THREADS, ...) for a command; an invalid variable is a
 * UserError (one line, exit code 2) naming it.
 */
export function readCliGpuEnv(): GpuEnv {
  try {
    return readGpuEnv();
  } catch (err) {
    throw new UserError(`${(err as Error).message}; fix the environment variable`);
  }
}
