/**
 * Whether this machine can run the sandbox (python3 and bubblewrap, see gpu-node/sandbox): tests
 * that need it skip with the stated reason only when bubblewrap is not on PATH; where it is, a
 * sandbox that fails to start is a test failure, not a skip.
 */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { beforeEach } from "vitest";

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

/** The reason sandbox tests skip here, or null when they must run. */
export const NO_SANDBOX_REASON: string | null = bubblewrapOnPath()
  ? null
  : "bubblewrap is not installed: the sandbox refuses to run programs (sandbox_unavailable), which test/sandbox-unavailable.test.ts checks";

/** Skips each test of the enclosing suite (or file), with the reason, where bubblewrap is not installed. */
export function skipWithoutSandbox(): void {
  beforeEach((ctx) => ctx.skip(NO_SANDBOX_REASON !== null, NO_SANDBOX_REASON ?? undefined));
}

/** Skips one test, with the reason, where bubblewrap is not installed (call it first in the test). */
export function needsSandbox(ctx: { skip(condition: boolean, note?: string): void }): void {
  ctx.skip(NO_SANDBOX_REASON !== null, NO_SANDBOX_REASON ?? undefined);
}
