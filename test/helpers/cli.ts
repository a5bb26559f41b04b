/** Runs the real CLI in a child process, as a user would. */
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const root = join(import.meta.dirname, "..", "..");

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
  /** The last stdout line parsed as JSON (the `--json` contract), or undefined. */
  json: unknown;
}

/** `kvgraft <args>` through tsx; `env` is added to the inherited environment. */
export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 120_000): CliResult {
  const r = spawnSync(process.execPath, ["--import", "tsx", join(root, "cli", "main.ts"), ...args], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: timeoutMs,
  });
  const last = r.stdout.trim().split("\n").at(-1) ?? "";
  let json: unknown;
  try {
    json = JSON.parse(last);
  } catch {
    json = undefined;
  }
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, json };
}
