/**
 * `kvgraft start` leaves no process behind: a hangup of its process group (a closed terminal)
 * stops the edge and the GPU node, and when `start` itself is killed (SIGKILL, no handler runs)
 * its GPU node notices through the closed IPC channel and stops too. Checked in the process
 * table (/proc): no process whose command line names the test's data directory remains.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const READY_TIMEOUT_MS = 240_000;
const GONE_TIMEOUT_MS = 30_000;

let dataDir: string;
const started: ChildProcess[] = [];

/** Pids of live processes whose command line contains `marker` (zombies count as gone). */
function processesNaming(marker: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8");
      const state = readFileSync(`/proc/${name}/stat`, "utf8").split(") ")[1]?.[0];
      if (cmdline.includes(marker) && state !== "Z") pids.push(Number(name));
    } catch {
      // exited while being read
    }
  }
  return pids;
}

/** Polls the process table until no process names `marker`; returns those still there at the end. */
async function waitUntilGone(marker: string): Promise<number[]> {
  const deadline = Date.now() + GONE_TIMEOUT_MS;
  for (;;) {
    const left = processesNaming(marker);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Starts `kvgraft start --json` as the leader of its own process group; resolves once it is ready. */
function startInOwnGroup(): Promise<ChildProcess> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith("KVGRAFT_") && k !== "MODEL_PATH" && k !== "PORT",
    ),
  );
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(root, "cli", "main.ts"), "start", "--json", "--data-dir", dataDir],
    {
      cwd: root,
      env: { ...env, EDGE_PORT: "0", GPU_PORT: "0" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    },
  );
  started.push(child);
  const stderr: string[] = [];
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (l) => stderr.push(l));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      if (line.startsWith("{")) resolve(child);
    });
    child.once("exit", (code) =>
      reject(new Error(`start exited with ${code} before it was ready:\n${stderr.join("\n")}`)),
    );
  });
}

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "kvgraft-processes-"));
});

afterAll(() => {
  // A failed test may have left processes: end exactly those this file started.
  for (const pid of processesNaming(dataDir)) process.kill(pid, "SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
});

describe("kvgraft start leaves no process behind", () => {
  it(
    "SIGHUP to its process group stops the edge and the GPU node (exit 0)",
    async () => {
      const start = await startInOwnGroup();
      // start and its GPU node (serve gpu --data-dir <dataDir>/gpu) both run now.
      expect(processesNaming(dataDir).length).toBe(2);
      const exited = new Promise<number | null>((r) => start.once("exit", (code) => r(code)));
      process.kill(-(start.pid as number), "SIGHUP");
      expect(await exited).toBe(0);
      expect(await waitUntilGone(dataDir)).toEqual([]);
    },
    READY_TIMEOUT_MS + GONE_TIMEOUT_MS,
  );

  it(
    "SIGKILL of start: its GPU node sees the parent gone and exits",
    async () => {
      const start = await startInOwnGroup();
      expect(processesNaming(dataDir).length).toBe(2);
      process.kill(start.pid as number, "SIGKILL");
      expect(await waitUntilGone(dataDir)).toEqual([]);
    },
    READY_TIMEOUT_MS + GONE_TIMEOUT_MS,
  );
});
