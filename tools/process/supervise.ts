/**
 * One process-supervision helper for the tools that run kvgraft's services as child processes
 * (`kvgraft start`, `kvgraft bench edge`, the tests): spawn, wait for the JSON ready line the
 * services print on stdout (`serve gpu --json`, `serve edge --json`, `start --json`), keep or pass
 * on stderr, stop with SIGTERM then SIGKILL, pass on the signals that end this process, and never
 * leave the child behind when this process exits. Production services do not import it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** How a child ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SuperviseOptions<T> {
  /** Names the child in errors (`serve gpu`, say). */
  name: string;
  /** Arguments of `command`. */
  args: string[];
  /** Default: this Node binary. */
  command?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /**
   * Reads the ready line: called with each stdout line that parses as JSON until it returns a
   * value, which `ready` resolves to. Without it `ready` resolves at once with undefined.
   */
  ready?: (line: unknown) => T | undefined;
  /** How long to wait for the ready line; then the child is killed. Default 300 s. */
  readyTimeoutMs?: number;
  /** Stdout lines other than the ready line (default: dropped). */
  onStdoutLine?: (line: string) => void;
  /** `keep` (default): kept in memory, read with `stderr()`; `inherit`: passed on; or a stream. */
  stderr?: "keep" | "inherit" | NodeJS.WritableStream;
  /**
   * Its own process group: a terminal's Ctrl-C then reaches only this process, which stops the
   * child itself (exactly one SIGTERM, so the child's drain is not cut short).
   */
  detached?: boolean;
  /**
   * Signals that, sent to this process, first stop the child (SIGTERM) and then take their usual
   * course here (a process that handles the signal itself keeps doing so). A detached child does
   * not get its parent's terminal's SIGHUP, and a process killed by a signal runs no exit
   * handlers: without this, closing the terminal would leave the child running.
   */
  forwardSignals?: NodeJS.Signals[];
  /**
   * An IPC channel to the child. It closes when this process dies, even by SIGKILL, which is how a
   * kvgraft child notices its parent is gone and stops (cli/main.ts) instead of living on.
   */
  ipc?: boolean;
}

export interface Supervised<T> {
  readonly child: ChildProcess;
  /** Resolves once the child printed its ready line; rejects if it exits or times out first. */
  readonly ready: Promise<T>;
  /** Resolves when the child has exited. */
  readonly exited: Promise<ExitStatus>;
  /** Whether the child is still running. */
  readonly running: boolean;
  /** What the child wrote to stderr (the last 256 KiB), with `stderr: "keep"`. */
  stderr(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the child is gone. */
  stop(graceMs?: number): Promise<ExitStatus>;
}

const STDERR_KEPT = 256 * 1024;

/** Starts a child process under supervision. */
export function supervise<T = undefined>(options: SuperviseOptions<T>): Supervised<T> {
  const stderrMode = options.stderr ?? "keep";
  const child = spawn(options.command ?? process.execPath, options.args, {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.env ? { env: options.env } : {}),
    stdio: [
      "ignore",
      "pipe",
      stderrMode === "inherit" ? "inherit" : "pipe",
      ...(options.ipc ? ["ipc" as const] : []),
    ],
    ...(options.detached ? { detached: true } : {}),
  });
  let stderr = "";
  if (stderrMode === "keep")
    child.stderr?.on("data", (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-STDERR_KEPT);
    });
  else if (stderrMode !== "inherit") child.stderr?.pipe(stderrMode, { end: false });

  const running = () => child.exitCode === null && child.signalCode === null;
  // This process exiting (an error, process.exit) must not leave the child running.
  const killOnExit = () => {
    if (running()) child.kill("SIGTERM");
  };
  process.once("exit", killOnExit);
  const forwarded = options.forwardSignals ?? [];
  const onSignal = (signal: NodeJS.Signals) => {
    for (const s of forwarded) process.off(s, onSignal);
    killOnExit();
    // Nobody else handles it: the signal's default action (termination) happens here too.
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  };
  for (const s of forwarded) process.on(s, onSignal);
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once("exit", (code, signal) => {
      process.off("exit", killOnExit);
      for (const s of forwarded) process.off(s, onSignal);
      resolve({ code, signal });
    });
  });
  const spawnFailed = new Promise<never>((_, reject) => child.once("error", reject));
  spawnFailed.catch(() => undefined);

  const ready = readyLine(child, options, exited, spawnFailed, () => stderr);
  ready.catch(() => undefined);

  const stop = async (graceMs = 10_000): Promise<ExitStatus> => {
    if (running()) child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    const status = await exited;
    clearTimeout(timer);
    return status;
  };
  return {
    child,
    ready,
    exited,
    get running() {
      return running();
    },
    stderr: () => stderr,
    stop,
  };
}

/** Reads stdout lines until the ready line; the others go to `onStdoutLine`. */
function readyLine<T>(
  child: ChildProcess,
  options: SuperviseOptions<T>,
  exited: Promise<ExitStatus>,
  spawnFailed: Promise<never>,
  stderr: () => string,
): Promise<T> {
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  if (!options.ready) {
    if (options.onStdoutLine) lines.on("line", options.onStdoutLine);
    return Promise.resolve(undefined as T);
  }
  const parse = options.ready;
  const timeoutMs = options.readyTimeoutMs ?? 300_000;
  const tail = () => (stderr() ? `:\n${stderr().slice(-4000)}` : "");
  let settled = false;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${options.name} was not ready within ${timeoutMs / 1000} s${tail()}`));
    }, timeoutMs);
    lines.on("line", (line) => {
      if (!settled && line.startsWith("{")) {
        const value = readyValue(line, parse);
        if (value !== undefined) {
          settled = true;
          clearTimeout(timer);
          resolve(value);
          return;
        }
      }
      options.onStdoutLine?.(line);
    });
    const fail = (err: Error) => {
      clearTimeout(timer);
      if (!settled) reject(err);
    };
    void exited.then(({ code, signal }) =>
      fail(new Error(`${options.name} exited (${code ?? signal}) before it was ready${tail()}`)),
    );
    spawnFailed.catch(fail);
  });
}

function readyValue<T>(line: string, parse: (value: unknown) => T | undefined): T | undefined {
  try {
    return parse(JSON.parse(line));
  } catch {
    return undefined;
  }
}

/** The `url` of a service's ready line (`{url, ...}`), without a trailing slash. */
export function readyUrl(line: unknown): string | undefined {
  const url = (line as { url?: unknown } | null)?.url;
  return typeof url === "string" ? url.replace(/\/+$/, "") : undefined;
}

/** The checkout's root (the folder with package.json above tools/). */
export const repoRoot = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("no package.json above tools/process");
    dir = parent;
  }
  return dir;
})();

/** Node arguments that run this checkout's `kvgraft` from source (tests and benches). */
export function kvgraftSourceArgs(...args: string[]): string[] {
  return ["--import", "tsx", join(repoRoot, "cli", "main.ts"), ...args];
}

/** Node arguments that run `kvgraft` through the same entry as this process (source or dist). */
export function kvgraftSameEntryArgs(...args: string[]): string[] {
  const entry = process.argv[1];
  if (!entry) throw new Error("cannot find the kvgraft entry script (process.argv[1])");
  return [...process.execArgv, entry, ...args];
}
