import { spawn } from "node:child_process";
import type { Readable } from "node:stream";
import type { LaunchPlan } from "./isolation.js";
import { type LauncherReport, parseReport, REPORT_FD } from "./launcher.js";

/** What the parent observed of one sandboxed process tree. */
export interface ProcessOutcome {
  stdout: string;
  stderr: string;
  /** The launcher's report; null when it never came (killed, or the sandbox failed to start). */
  report: LauncherReport | null;
  /** Why the parent killed the process group, if it did. */
  killedFor: "wall" | "output" | null;
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

/**
 * Runs a launch plan in a new process group with an empty environment. Output is capped while it is
 * read and the wall clock is enforced here: either kills the whole group with SIGKILL.
 */
export function runProcess(
  plan: LaunchPlan,
  limits: { wallMs: number; outputBytes: number },
): Promise<ProcessOutcome> {
  const started = performance.now();
  const stdout = new CappedBuffer(limits.outputBytes);
  const stderr = new CappedBuffer(limits.outputBytes);
  const report = new CappedBuffer(REPORT_CAP);
  let killedFor: ProcessOutcome["killedFor"] = null;

  const child = spawn(plan.command, plan.args, {
    cwd: plan.cwd,
    env: {},
    detached: true,
    stdio: ["ignore", "pipe", "pipe", "pipe"],
  });
  const killGroup = () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // The group is already gone.
    }
  };
  const kill = (reason: "wall" | "output") => {
    killedFor ??= reason;
    killGroup();
  };

  return new Promise((resolve) => {
    let spawnError = "";
    let drainTimer: NodeJS.Timeout | undefined;
    const wallTimer = setTimeout(() => kill("wall"), limits.wallMs);
    const finish = () => {
      clearTimeout(wallTimer);
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
