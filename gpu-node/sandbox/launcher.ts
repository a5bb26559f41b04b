import type { SandboxLimits } from "./limits.js";

/** File descriptor on which the launcher reports how the program ended. */
export const REPORT_FD = 3;

/** What the launcher is told, passed as one JSON argument. */
export interface LauncherConfig {
  /** [resource name, soft, hard] triples applied before anything else. */
  rlimits: [string, number, number][];
  /** Unprivileged uid (and gid) to switch to before the program runs; null keeps the current one. */
  uid: number | null;
  /** Program path as seen where the launcher runs. */
  program: string;
}

/** How the program ended, as the launcher saw it through wait4. */
export interface LauncherReport {
  exit: number | null;
  signal: number | null;
  cpuMs: number;
}

/**
 * The trusted first process inside the sandbox (run with `python -I -B -c`): sets the rlimits,
 * drops to the job's uid and every capability, then forks the program into a fresh interpreter with an empty
 * environment and reports its exit status and CPU time (rusage, children included) on fd 3.
 * Node cannot set rlimits on a child or read its rusage; this tiny supervisor can.
 */
export const LAUNCHER_SOURCE = `
import json, os, resource, sys
cfg = json.loads(sys.argv[1])
for name, soft, hard in cfg["rlimits"]:
    resource.setrlimit(getattr(resource, name), (soft, hard))
uid = cfg["uid"]
if uid is not None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        sys.exit("sandbox: could not drop privileges")
    # setuid clears the permitted and effective sets but not the inheritable one: clear all three.
    import ctypes
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    if ctypes.CDLL(None, use_errno=True).capset(header, (ctypes.c_uint32 * 6)()) != 0:
        sys.exit("sandbox: could not clear capabilities")
pid = os.fork()
if pid == 0:
    try:
        os.close(${REPORT_FD})
        os.execve(sys.executable, [sys.executable, "-I", "-B", cfg["program"]], {})
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
report = {
    "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
    "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
    "cpuMs": round((usage.ru_utime + usage.ru_stime) * 1000),
}
os.write(${REPORT_FD}, json.dumps(report).encode())
`;

/**
 * The rlimits for a job. RLIMIT_NPROC counts per uid (per user namespace): it binds because every
 * job runs as a fresh uid (root) or in a user namespace of its own (not root).
 */
export function rlimitsFor(limits: SandboxLimits): LauncherConfig["rlimits"] {
  return [
    // The soft limit sends SIGXCPU; the hard one a second later SIGKILLs a program that ignores it.
    ["RLIMIT_CPU", limits.cpuSeconds, limits.cpuSeconds + 1],
    ["RLIMIT_AS", limits.memoryBytes, limits.memoryBytes],
    ["RLIMIT_FSIZE", limits.fileBytes, limits.fileBytes],
    ["RLIMIT_CORE", 0, 0],
    ["RLIMIT_NOFILE", 64, 64],
    ["RLIMIT_NPROC", limits.processes, limits.processes],
  ];
}

/** Parses the launcher's report; null when it is missing or malformed (the launcher was killed). */
export function parseReport(text: string): LauncherReport | null {
  try {
    const value = JSON.parse(text) as Partial<LauncherReport>;
    if (typeof value.cpuMs !== "number") return null;
    return { exit: value.exit ?? null, signal: value.signal ?? null, cpuMs: value.cpuMs };
  } catch {
    return null;
  }
}
