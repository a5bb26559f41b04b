/**
 * Which process holds a TCP port, for the one-line "already in use" errors of `kvgraft start` and
 * `kvgraft serve`. Linux only (/proc); elsewhere, or when the holder belongs to another user whose
 * /proc entries cannot be read, the message names just the port.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { createServer } from "node:net";
import { UserError } from "./args.js";

/** A process listening on a port: its id and command line. */
export interface PortHolder {
  pid: number;
  command: string;
}

/** Socket inodes in LISTEN state (st 0A) on `port`, from /proc/net/tcp and tcp6. */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      if (!local || fields[3] !== "0A") continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(":") + 1), 16) === port && fields[9])
        inodes.add(fields[9]);
    }
  }
  return inodes;
}

/** The process that listens on `port` (found through its socket's inode in /proc/<pid>/fd), or null. */
export function findPortHolder(port: number): PortHolder | null {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return null;
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's process
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode && inodes.has(inode)) {
        let command = "";
        try {
          command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
        } catch {
          // exited meanwhile: the pid alone still helps
        }
        return { pid: Number(pid), command };
      }
    }
  }
  return null;
}

/** "HOST:PORT is already in use by pid N (command)" or, where the holder is not found, without it. */
export function portInUseMessage(host: string, port: number): string {
  const holder = findPortHolder(port);
  const address = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  if (!holder) return `${address} is already in use`;
  const command = holder.command.length > 160 ? `${holder.command.slice(0, 157)}...` : holder.command;
  return `${address} is already in use by pid ${holder.pid}${command ? ` (${command})` : ""}`;
}

/**
 * Throws a UserError naming the holder when `host:port` cannot be listened on because it is in
 * use; `remedy` says what to do (e.g. "stop it or set GPU_PORT"). Port 0 (any free port) passes.
 */
export async function ensurePortFree(host: string, port: number, remedy: string): Promise<void> {
  if (port === 0) return;
  const inUse = await new Promise<boolean>((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (err: NodeJS.ErrnoException) =>
      err.code === "EADDRINUSE" ? resolve(true) : reject(err),
    );
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(false)));
  });
  if (inUse) throw new UserError(`${portInUseMessage(host, port)}; ${remedy}`);
}
