/**
 * The sandbox backends this machine can test (gpu-node/sandbox): `wasm` everywhere (npm installs
 * it), `bwrap` where bubblewrap is on PATH. Tests of the bubblewrap backend skip with the stated
 * reason only where it is not installed; where it is, a backend that fails to start is a test
 * failure, not a skip.
 */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import type { IsolationMode } from "../../gpu-node/sandbox/sandbox.js";

/** True when an executable `bwrap` is on PATH. */
export function bubblewrapOnPath(): boolean {
  return (process.env.PATH ?? "").split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, "bwrap"), constants.X_OK);
      return dir !== "";
    } catch {
      return false;
    }
  });
}

/** Why the bubblewrap backend's tests skip here, or null when they must run. */
export const NO_BWRAP_REASON: string | null = bubblewrapOnPath()
  ? null
  : "bubblewrap is not installed (apt-get install bubblewrap runs these; .ci/run does): KVGRAFT_SANDBOX=bwrap refuses here, which test/sandbox-unavailable.test.ts checks";

/** Both backends, each with the reason its tests skip here (null: they run). */
export const BACKENDS: { mode: IsolationMode; skip: string | null }[] = [
  { mode: "wasm", skip: null },
  { mode: "bwrap", skip: NO_BWRAP_REASON },
];
