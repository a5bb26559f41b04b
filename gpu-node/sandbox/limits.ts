import { badRequest } from "../errors.js";

/** Resource limits for one program run. */
export interface SandboxLimits {
  /** CPU seconds per process (RLIMIT_CPU; a whole number). */
  cpuSeconds: number;
  /** Wall-clock limit enforced by the parent, which then kills bubblewrap and so the job's pid namespace. */
  wallMs: number;
  /** Address-space limit per process (RLIMIT_AS). */
  memoryBytes: number;
  /** Processes and threads the job may have (RLIMIT_NPROC on its own uid or user namespace). */
  processes: number;
  /** Largest file the program may write (RLIMIT_FSIZE). */
  fileBytes: number;
  /** Bytes of stdout, and separately of stderr, kept; more kills the program (`output_limit`). */
  outputBytes: number;
  /** Total size of the scratch directory (a size-limited tmpfs). */
  scratchBytes: number;
}

export const DEFAULT_LIMITS: SandboxLimits = {
  cpuSeconds: 5,
  wallMs: 10_000,
  memoryBytes: 256 * 1024 * 1024,
  processes: 16,
  fileBytes: 1024 * 1024,
  outputBytes: 64 * 1024,
  scratchBytes: 16 * 1024 * 1024,
};

/** Merges overrides onto a base, rejecting values that are not positive integers (400 `invalid_limits`). */
export function mergeLimits(base: SandboxLimits, overrides: Partial<SandboxLimits> = {}): SandboxLimits {
  const merged = { ...base };
  for (const [key, value] of Object.entries(overrides) as [keyof SandboxLimits, unknown][]) {
    if (value === undefined) continue;
    if (!(key in base)) throw badRequest("invalid_limits", `unknown sandbox limit '${key}'`);
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1)
      throw badRequest("invalid_limits", `sandbox limit '${key}' must be a positive integer`);
    merged[key] = value;
  }
  return merged;
}
