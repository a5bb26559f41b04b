import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import type { LaunchPlan } from "./isolation.js";
import { type LauncherReport, parseReport, REPORT_FD } from "./launcher.js";
import { SECCOMP_FD } from "./seccomp.js";

/** What the parent observed of one sandboxed process tree. */
export interface ProcessOutcome {
  stdout: string;
  stderr: string;
  /** The launcher's report; null when it never came (killed, or the sandbox failed to start). */
  report: LauncherReport | null;
  /** Why the parent killed the process group, if it did (`cpu`: past the CPU limit it polls). */
  killedFor: "wall" | "cpu" | "output" | null;
  wallMs: number;
}

/** Bytes of a stream kept up to a cap; `add` says whether the cap was exceeded. */
class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly cap: number) {}

  add(chunk: Buffer): boolean {
    const room = this.cap - this.size;
    if (room > 0) this.chunks.push(chunk.subarray(0, room));
    this.size += chunk.length;
    return this.size > this.cap;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

/** Bytes of the launcher's report kept (it is a short JSON object). */
const REPORT_CAP = 4096;
/** How long to wait for pipes to close after the process exits before giving up on stragglers. */
const DRAIN_MS = 1000;

/** What the supervisor enforces. `cpuMs`: CPU time the parent polls for (Linux /proc); unset, none. */
export interface SuperviseLimits {
  wallMs: number;
  outputBytes: number;
  cpuMs?: number;
}

/** How often the parent reads a child's CPU time when it enforces a CPU limit itself. */
const CPU_POLL_MS = 25;
/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/** CPU milliseconds a process has used (its own, user and system), or null when /proc cannot tell. */
function cpuMsOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
  } catch {
    return null;
  }
}

/**
 * Runs a launch plan in a new process group with an empty environment. Output is capped while it is
 * read and the wall clock is enforced here: either kills the whole group with SIGKILL.
 */
export function runProcess(plan: LaunchPlan, limits: SuperviseLimits): Promise<ProcessOutcome> {
  const child = spawn(plan.command, plan.args, {
    cwd: plan.cwd,
    env: {},
    detached: true,
    stdio: ["ignore", "pipe", "pipe", "pipe", plan.seccomp ? "pipe" : "ignore"],
  });
  const seccomp = child.stdio[SECCOMP_FD] as Writable | null;
  seccomp?.on("error", () => {});
  seccomp?.end(plan.seccomp);
  return superviseProcess(child, limits);
}

/**
 * Watches a child (started detached, stdio [any, pipe, pipe, pipe]) from now until it ends:
 * collects its capped stdout and stderr and its report on fd 3, and kills its whole process group
 * with SIGKILL past the wall clock, the output cap or, with `cpuMs`, the CPU time it polls.
 */
export function superviseProcess(child: ChildProcess, limits: SuperviseLimits): Promise<ProcessOutcome> {
  const started = performance.now();
  const stdout = new CappedBuffer(limits.outputBytes);
  const stderr = new CappedBuffer(limits.outputBytes);
  const report = new CappedBuffer(REPORT_CAP);
  let killedFor: ProcessOutcome["killedFor"] = null;

  const killGroup = () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // The group is already gone.
    }
  };
  const kill = (reason: NonNullable<ProcessOutcome["killedFor"]>) => {
    killedFor ??= reason;
    killGroup();
  };

  return new Promise((resolve) => {
    let spawnError = "";
    let drainTimer: NodeJS.Timeout | undefined;
    const wallTimer = setTimeout(() => kill("wall"), limits.wallMs);
    const cpuBase = limits.cpuMs !== undefined && child.pid !== undefined ? cpuMsOf(child.pid) : null;
    const cpuTimer =
      cpuBase === null
        ? undefined
        : setInterval(() => {
            const used = child.pid === undefined ? null : cpuMsOf(child.pid);
            if (used !== null && used - cpuBase > (limits.cpuMs ?? 0)) kill("cpu");
          }, CPU_POLL_MS);
    const finish = () => {
      clearTimeout(wallTimer);
      clearInterval(cpuTimer);
      clearTimeout(drainTimer);
      for (const stream of child.stdio) stream?.destroy();
      resolve({
        stdout: stdout.text(),
        stderr: spawnError || stderr.text(),
        report: parseReport(report.text()),
        killedFor,
        wallMs: Math.round(performance.now() - started),
      });
    };
    child.stdout?.on("data", (chunk: Buffer) => stdout.add(chunk) && kill("output"));
    child.stderr?.on("data", (chunk: Buffer) => stderr.add(chunk) && kill("output"));
    (child.stdio[REPORT_FD] as Readable | null)?.on("data", (chunk: Buffer) => report.add(chunk));
    child.once("error", (err) => {
      spawnError = `sandbox could not start: ${err.message}`;
      finish();
    });
    child.once("exit", () => {
      // Descendants left behind in the group (weak modes have no pid namespace) die with the job.
      killGroup();
      drainTimer = setTimeout(finish, DRAIN_MS);
    });
    child.once("close", finish);
  });
}
