import { accessSync, constants, lstatSync, readlinkSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { executableSearchPath } from "../config.js";
import { LAUNCHER_SOURCE, type LauncherConfig, rlimitsFor } from "./launcher.js";
import type { SandboxLimits } from "./limits.js";
import { type ProcessOutcome, runProcess } from "./process.js";
import type { PythonInstall } from "./python.js";
import { noUserNamespacesFilter, SECCOMP_FD } from "./seccomp.js";

/**
 * How a job is isolated: `wasm` (./wasm.ts, the default) or `bwrap`, this file: bubblewrap with
 * new mount, network, pid, ipc and uts namespaces; only the system libraries and the Python
 * installation are visible, read-only, plus the program and a size-limited tmpfs scratch
 * directory. Not root: a user namespace of its own, no capabilities, and no further user
 * namespace (`--disable-userns`). Root: bubblewrap runs privileged with every capability dropped
 * but setuid/setgid, and the launcher drops to a fresh uid of its own, because a user namespace
 * created by root still maps to uid 0, which Linux exempts from RLIMIT_NPROC. In both, a seccomp
 * filter refuses new user namespaces (./seccomp.ts): inside one a program could mount an uncapped
 * tmpfs. Weaker modes (plain namespaces, rlimits) let programs read host files; without
 * bubblewrap this backend refuses instead (`sandbox_unavailable`).
 */
export type IsolationMode = "wasm" | "bwrap";

/** Host paths of one job's files. */
export interface JobFiles {
  /** The program, PARAMS line included. */
  program: string;
  /** The job's host directory: bubblewrap's working directory (the job itself sees only a tmpfs). */
  dir: string;
}

/** A command line that runs one job, and the uid the job runs as (null: the caller's). */
export interface LaunchPlan {
  command: string;
  args: string[];
  cwd: string;
  uid: number | null;
  /** A seccomp program bubblewrap reads on SECCOMP_FD (`--seccomp 4`). */
  seccomp?: Buffer;
}

/** Where the program and scratch directory appear inside the sandbox. */
const SANDBOX_PROGRAM = "/job/main.py";
const SANDBOX_SCRATCH = "/scratch";
/** System directories bound read-only (or recreated as symlinks) inside the sandbox; not /etc. */
const SYSTEM_DIRS = ["/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"];
/** Fresh uids come from this range, far above any real account. */
const UID_BASE = 2 ** 30;
const UID_SPAN = 2 ** 28;

/** Knows how to launch jobs under bubblewrap on this machine. */
export class BwrapIsolation {
  readonly mode = "bwrap" as const;

  private constructor(
    private readonly bwrap: string,
    private readonly python: PythonInstall,
    private readonly isRoot: boolean,
    private readonly seccomp: Buffer,
    private readonly workDir: string,
  ) {}

  /** The launcher, or null when bubblewrap is not on PATH; throws where no seccomp filter is known for the CPU. */
  static detect(python: PythonInstall, workDir: string): BwrapIsolation | null {
    const bwrap = findOnPath("bwrap");
    if (!bwrap) return null;
    const seccomp = noUserNamespacesFilter();
    if (!seccomp) throw new Error(`no seccomp filter for ${process.arch}`);
    return new BwrapIsolation(bwrap, python, process.getuid?.() === 0, seccomp, workDir);
  }

  /** Runs one program (PARAMS line included) in a fresh job directory, removed afterwards. */
  async execute(source: string, limits: SandboxLimits): Promise<ProcessOutcome> {
    const dir = await mkdtemp(join(this.workDir, "kvgraft-sandbox-"));
    try {
      const program = join(dir, "main.py");
      await writeFile(program, source, { mode: 0o644 });
      return await runProcess(this.plan({ program, dir }, limits), limits);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Nothing boots ahead of a job. */
  async warmed(): Promise<void> {}

  /** Nothing waits between jobs. */
  close(): void {}

  /** The command line for one job. */
  plan(files: JobFiles, limits: SandboxLimits): LaunchPlan {
    const uid = this.isRoot ? UID_BASE + Math.floor(Math.random() * UID_SPAN) : null;
    const config: LauncherConfig = { rlimits: rlimitsFor(limits), uid, program: SANDBOX_PROGRAM };
    const python = [this.python.executable, "-I", "-B", "-c", LAUNCHER_SOURCE, JSON.stringify(config)];
    return {
      command: this.bwrap,
      args: [...this.bwrapArgs(files, limits), "--seccomp", String(SECCOMP_FD), "--", ...python],
      cwd: files.dir,
      uid,
      seccomp: this.seccomp,
    };
  }

  private bwrapArgs(files: JobFiles, limits: SandboxLimits): string[] {
    const args = [
      ...(this.isRoot
        ? ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        : ["--unshare-user", "--disable-userns", "--assert-userns-disabled", "--cap-drop", "ALL"]),
      ...["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"],
      // A pid namespace of its own: when its first process dies (or bwrap is killed) every
      // process in it dies too, double-forked daemons included.
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
    // The tmpfs caps the scratch directory's total size, not only each file's (RLIMIT_FSIZE).
    args.push("--perms", "0777", "--size", String(limits.scratchBytes), "--tmpfs", SANDBOX_SCRATCH);
    args.push("--chdir", SANDBOX_SCRATCH);
    return args;
  }
}

/** Absolute path of an executable found on PATH, or null. */
function findOnPath(name: string): string | null {
  for (const dir of executableSearchPath()) {
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
