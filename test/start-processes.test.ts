/**
 * `kvgraft start` leaves no process behind: a hangup of its process group (a closed terminal)
 * stops the edge and the GPU node, and when `start` itself is killed (SIGKILL, no handler runs)
 * its GPU node notices through the closed IPC channel and stops too. Checked in the process
 * table (/proc): no process whose command line names the test's data directory remains. The
 * restart's banner also shows curl examples that read the admin key by its absolute path.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const READY_TIMEOUT_MS = 240_000;
const GONE_TIMEOUT_MS = 30_000;

let dataDir: string;
/**
 * What names this file's processes: the data directory's unique name. Not its absolute path:
 * `start` gets it relative to the checkout, which need not contain the absolute path (a checkout
 * under /tmp gives ../kvgraft-processes-...).
 */
let marker: string;
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

/**
 * Starts `kvgraft start` as the leader of its own process group with a relative --data-dir;
 * resolves once it is ready (with --json: its JSON line; without: the end of its banner) with
 * what it printed on stdout.
 */
function startInOwnGroup(json: boolean): Promise<{ start: ChildProcess; stdout: string[] }> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith("KVGRAFT_") && k !== "MODEL_PATH" && k !== "PORT",
    ),
  );
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(root, "cli", "main.ts"),
      "start",
      ...(json ? ["--json"] : []),
      "--data-dir",
      relative(root, dataDir),
    ],
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
  const stdout: string[] = [];
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      stdout.push(line);
      if (json ? line.startsWith("{") : line === "Ctrl-C stops both services.")
        resolve({ start: child, stdout });
    });
    child.once("exit", (code) =>
      reject(new Error(`start exited with ${code} before it was ready:\n${stderr.join("\n")}`)),
    );
  });
}

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "kvgraft-processes-"));
  marker = basename(dataDir);
});

afterAll(() => {
  // A failed test may have left processes: end exactly those this file started.
  for (const pid of processesNaming(marker)) process.kill(pid, "SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
});

describe("kvgraft start leaves no process behind", () => {
  it(
    "SIGHUP to its process group stops the edge and the GPU node (exit 0)",
    async () => {
      const { start } = await startInOwnGroup(true);
      // start and its GPU node (serve gpu --data-dir <dataDir>/gpu) both run now.
      expect(processesNaming(marker).length).toBe(2);
      const exited = new Promise<number | null>((r) => start.once("exit", (code) => r(code)));
      process.kill(-(start.pid as number), "SIGHUP");
      expect(await exited).toBe(0);
      expect(await waitUntilGone(marker)).toEqual([]);
    },
    READY_TIMEOUT_MS + GONE_TIMEOUT_MS,
  );

  it(
    "SIGKILL of start: its GPU node sees the parent gone and exits",
    async () => {
      // A restart on the data directory of the test above: the admin key is read from its file.
      const { start, stdout } = await startInOwnGroup(false);
      // The banner's curl examples read the key by its absolute path, so they work from any folder.
      const keyFile = join(dataDir, "admin.key");
      expect(stdout.filter((line) => line.trimStart().startsWith("curl ")).length).toBe(3);
      // The banner names the web console's URL.
      expect(stdout.some((line) => /^ {2}console {3}http:\/\/\S+\/console /.test(line))).toBe(true);
      for (const line of stdout.filter((l) => l.trimStart().startsWith("curl ")))
        expect(line).toContain(`-H "Authorization: Bearer $(cat '${keyFile}')"`);
      expect(processesNaming(marker).length).toBe(2);
      process.kill(start.pid as number, "SIGKILL");
      expect(await waitUntilGone(marker)).toEqual([]);
    },
    READY_TIMEOUT_MS + GONE_TIMEOUT_MS,
  );
});
