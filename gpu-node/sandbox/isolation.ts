import { accessSync, constants, lstatSync, readlinkSync, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { LAUNCHER_SOURCE, type LauncherConfig, rlimitsFor } from "./launcher.js";
import type { SandboxLimits } from "./limits.js";
import type { PythonInstall } from "./python.js";

/**
 * How a job is isolated, strongest first:
 * - `bwrap`: bubblewrap with new mount, network, pid, ipc and uts namespaces (and a user namespace
 *   when not root); only the system libraries and the Python installation are visible, read-only,
 *   plus the program and a size-limited tmpfs scratch directory. As root, bubblewrap runs
 *   privileged and the job drops to a fresh uid of its own, because Linux does not enforce
 *   RLIMIT_NPROC for uid 0 (a user namespace created by root still maps to uid 0).
 * - `unshare`: new network, pid, ipc, uts and mount namespaces; the host filesystem stays visible.
 * - `rlimits`: resource limits and an empty environment only.
 * In every mode the launcher applies the rlimits; the weaker two drop to a fresh uid only when
 * running as root and the interpreter is reachable by other users.
 */
export type IsolationMode = "bwrap" | "unshare" | "rlimits";

/** Modes in the order they are tried. */
export const ISOLATION_MODES: readonly IsolationMode[] = ["bwrap", "unshare", "rlimits"];

/** Host paths of one job's files. */
export interface JobFiles {
  /** The program, PARAMS line included. */
  program: string;
  /** Writable scratch directory (bwrap uses a tmpfs instead). */
  scratch: string;
}

/** A command line that runs one job, and the uid the job runs as (null: the caller's). */
export interface LaunchPlan {
  command: string;
  args: string[];
  cwd: string;
  uid: number | null;
}

/** Where the program and scratch directory appear inside the bwrap sandbox. */
const SANDBOX_PROGRAM = "/job/main.py";
const SANDBOX_SCRATCH = "/scratch";
/** System directories bound read-only (or recreated as symlinks) inside the bwrap sandbox. */
const SYSTEM_DIRS = ["/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"];
/** Fresh uids come from this range, far above any real account. */
const UID_BASE = 2 ** 30;
const UID_SPAN = 2 ** 28;

/** Knows how to launch jobs in one mode on this machine. */
export class Isolation {
  private constructor(
    readonly mode: IsolationMode,
    private readonly tool: string | null,
    private readonly python: PythonInstall,
    private readonly isRoot: boolean,
    private readonly canDropUid: boolean,
  ) {}

  /** The launcher for `mode` with job directories under `workDir`, or null when its tool is not installed. */
  static forMode(mode: IsolationMode, python: PythonInstall, workDir: string): Isolation | null {
    const tool = mode === "bwrap" ? findOnPath("bwrap") : mode === "unshare" ? findOnPath("unshare") : null;
    if (mode !== "rlimits" && !tool) return null;
    const isRoot = process.getuid?.() === 0;
    // bwrap binds everything the job needs itself; other modes need the host paths reachable by a fresh uid.
    const canDropUid = isRoot && (mode === "bwrap" || [...python.roots, workDir].every(reachableByOthers));
    return new Isolation(mode, tool, python, isRoot, canDropUid);
  }

  /**
   * Whether jobs get a process count of their own, so RLIMIT_NPROC stops a fork bomb: a fresh uid,
   * or (not root) a user namespace of their own. Without one a fork bomb is bounded only by the wall clock.
   */
  get limitsProcesses(): boolean {
    return this.canDropUid || (!this.isRoot && this.mode !== "rlimits");
  }

  /** The command line for one job. */
  plan(files: JobFiles, limits: SandboxLimits): LaunchPlan {
    const uid = this.canDropUid ? UID_BASE + Math.floor(Math.random() * UID_SPAN) : null;
    const config: LauncherConfig = {
      rlimits: rlimitsFor(limits, this.limitsProcesses),
      uid,
      program: this.mode === "bwrap" ? SANDBOX_PROGRAM : files.program,
    };
    const python = [this.python.executable, "-I", "-B", "-c", LAUNCHER_SOURCE, JSON.stringify(config)];
    if (this.mode === "rlimits" || !this.tool) {
      const [command = "", ...args] = python;
      return { command, args, cwd: files.scratch, uid };
    }
    const prefix = this.mode === "bwrap" ? this.bwrapArgs(files, limits) : this.unshareArgs();
    return { command: this.tool, args: [...prefix, "--", ...python], cwd: files.scratch, uid };
  }

  private unshareArgs(): string[] {
    const user = this.isRoot ? [] : ["--user", "--map-root-user"];
    return [...user, "--net", "--ipc", "--uts", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc"];
  }

  private bwrapArgs(files: JobFiles, limits: SandboxLimits): string[] {
    const args = [
      ...(this.isRoot
        ? ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        : ["--unshare-user"]),
      ...["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"],
      ...["--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev"],
    ];
    const bound: string[] = [];
    for (const dir of SYSTEM_DIRS) {
      const stat = lstatSync(dir, { throwIfNoEntry: false });
      if (stat?.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
      else if (stat?.isDirectory()) {
        args.push("--ro-bind", dir, dir);
        bound.push(dir);
      }
    }
    const created = new Set<string>();
    for (const root of this.python.roots) {
      if (bound.some((dir) => root === dir || root.startsWith(`${dir}/`))) continue;
      // bwrap copies the host's modes onto parent directories it creates (0700 for /root): make them traversable.
      for (const parent of ancestors(root)) {
        if (created.has(parent) || bound.includes(parent)) continue;
        args.push("--perms", "0755", "--dir", parent);
        created.add(parent);
      }
      args.push("--ro-bind", root, root);
    }
    args.push("--perms", "0755", "--dir", dirname(SANDBOX_PROGRAM));
    args.push("--ro-bind", files.program, SANDBOX_PROGRAM);
    args.push("--perms", "0777", "--size", String(limits.scratchBytes), "--tmpfs", SANDBOX_SCRATCH);
    args.push("--chdir", SANDBOX_SCRATCH);
    return args;
  }
}

/** Absolute path of an executable found on PATH, or null. */
function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

/** Proper ancestors of an absolute path, outermost first ("/a/b/c" gives "/a", "/a/b"). */
function ancestors(path: string): string[] {
  const parts = path.split("/").filter(Boolean);
  return parts.slice(0, -1).map((_, i) => `/${parts.slice(0, i + 1).join("/")}`);
}

/** Whether a user with no relation to the owner can traverse to `path` and read it. */
function reachableByOthers(path: string): boolean {
  return [...ancestors(path), path].every((dir) => (statSync(dir).mode & 0o001) !== 0);
}
