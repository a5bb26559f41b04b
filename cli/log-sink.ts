/**
 * Where `kvgraft start`'s logs go. Every JSON line of both services (the edge in this process and
 * the GPU node's stderr) is appended to one log file, with a `service` field; the terminal gets a
 * readable line for each event that matters to the person watching it: warnings, errors (a 5xx
 * answer included) and info events other than the line per request. `kvgraft serve` writes the
 * JSON lines to stderr as they are.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import { Writable } from "node:stream";
import {
  createLogger,
  type LogFields,
  type Logger,
  type LogLevel,
  parseLogLine,
  readableLogLine,
} from "../shared/http/logger.js";

export interface StartLogSink {
  /** The edge's logger. */
  logger: Logger;
  /** The GPU node's stderr: its JSON lines go where the edge's do; other lines reach the terminal as they are. */
  gpuStderr: Writable;
  /** The log file. */
  path: string;
  /** Closes the file; lines that come later reach the terminal only. */
  close(): void;
}

/** Opens (appends to) the log file at `path`; `terminal` prints one readable line. */
export function startLogSink(path: string, level: LogLevel, terminal: (line: string) => void): StartLogSink {
  let fd: number | null = openSync(path, "a", 0o600);
  const take = (line: string, service: string) => {
    const record = parseLogLine(line);
    if (record === null) {
      // Not a log line (a child's one-line mistake, a native library's own output): shown as it is.
      if (line.trim() !== "") terminal(line);
      return;
    }
    if (fd !== null) writeSync(fd, `${JSON.stringify({ service, ...record })}\n`);
    if (matters(record)) terminal(readableLogLine(record, service));
  };
  let partial = "";
  const gpuStderr = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) take(line, "gpu");
      done();
    },
  });
  return {
    logger: createLogger({ level, write: (line) => take(line, "edge") }),
    gpuStderr,
    path,
    // The GPU node's last lines can arrive after its exit: those still reach the terminal.
    close: () => {
      if (fd === null) return;
      closeSync(fd);
      fd = null;
    },
  };
}

/** Whether a record is one for the terminal: not debug, and not a request answered below 500 (those log at info). */
function matters(record: LogFields): boolean {
  if (record.level === "debug") return false;
  return !(record.level === "info" && record.message === "request");
}
