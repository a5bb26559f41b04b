/**
 * The first load of an imported block runs in a disposable child process before the serving
 * process loads it: a llama.cpp abort, a crash or a runaway allocation there is a refused import
 * (422 `block_invalid`), not a dead node. The child's resident memory is watched and it is killed
 * past its limit, and it has a wall-clock limit.
 */

import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { childProcessEnv } from "../../config.js";
import type { LlamaBinary } from "../../engine/llama-binary.js";
import { unavailable, unprocessable } from "../../errors.js";

const here = fileURLToPath(import.meta.url);
/** The child script beside this module: `.ts` under tsx in a checkout, `.js` in dist/. */
const CHILD = join(dirname(here), `isolated-load-child${extname(here)}`);
const POLL_MS = 25;

/** The serving engine's shape, which the child's context copies (the state's layout needs it). */
export interface IsolatedLoadRequest {
  /** The serving engine's llama.cpp binary: the child must read the format that one writes. */
  binary: LlamaBinary;
  statePath: string;
  modelPath: string;
  slots: number;
  contextSize: number;
  batchSize: number;
  flashAttention: boolean;
  kvType: "F16" | "Q8_0";
  swaFullCache: boolean;
  /** The token count the load must end at. */
  tokenCount: number;
}

export interface IsolatedLoadLimits {
  /** Resident memory the child may reach before it is killed. */
  memoryBytes: number;
  timeoutMs: number;
}

/**
 * Loads the state in a child process; resolves when it loaded to `tokenCount` tokens from
 * position 0, throws 422 `block_invalid` when the child failed, crashed or hit a limit.
 */
export async function isolatedLoadCheck(req: IsolatedLoadRequest, limits: IsolatedLoadLimits): Promise<void> {
  const { tokenCount, ...childReq } = req;
  const args = extname(CHILD) === ".ts" ? ["--import", "tsx", CHILD] : [CHILD];
  const child = spawn(process.execPath, [...args, JSON.stringify(childReq)], {
    // The child exits when its stdin closes: a node killed mid-check leaves no orphan loading on.
    stdio: ["pipe", "pipe", "pipe"],
    env: childProcessEnv(),
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-2000);
  });
  let killedFor: string | null = null;
  const kill = (why: string) => {
    killedFor ??= why;
    child.kill("SIGKILL");
  };
  const timer = setTimeout(() => kill(`it ran past ${limits.timeoutMs} ms`), limits.timeoutMs);
  const watch = setInterval(() => {
    if (child.pid === undefined) return;
    void residentBytes(child.pid).then((rss) => {
      if (rss > limits.memoryBytes) kill(`its memory passed ${limits.memoryBytes} bytes`);
    });
  }, POLL_MS);
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
    (resolve) => {
      child.once("error", (error) => resolve({ code: null, signal: null, error }));
      child.once("close", (code, signal) => resolve({ code, signal }));
    },
  ).finally(() => {
    clearTimeout(timer);
    clearInterval(watch);
  });
  if (exit.error)
    throw unavailable("isolated_load_unavailable", `cannot start the load check: ${exit.error.message}`);
  const refuse = (why: string) =>
    unprocessable("block_invalid", `state file: the isolated first load failed: ${why}`, {
      field: "state",
      ...(stderr.trim() ? { log: stderr.trim().split("\n").slice(-3).join("\n") } : {}),
    });
  if (killedFor) throw refuse(`it was killed because ${killedFor}`);
  if (exit.code !== 0) throw refuse(exit.signal ? `llama.cpp died (${exit.signal})` : `exit ${exit.code}`);
  const result = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as {
    tokens?: number;
    cellsStart?: number;
  };
  // The first cell is 0, or inside the window's tail for a sliding-window model without the full cache.
  const start = result.cellsStart ?? -1;
  if (result.tokens !== tokenCount || start < 0 || start >= tokenCount)
    throw refuse(`it loaded ${result.tokens} tokens with its first cell at ${start}, expected ${tokenCount}`);
}

async function residentBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}
