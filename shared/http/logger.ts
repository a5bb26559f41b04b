/**
 * The one structured logger of both services: one JSON object per line, with a level that the
 * configuration sets. It uses only `console`, so it runs in Node (where `console.error` is stderr)
 * and in Workers (where both console methods reach the log stream) alike.
 */

/** Levels from most to least verbose; `silent` logs nothing. */
export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
type EntryLevel = Exclude<LogLevel, "silent">;

/** Extra fields of a line; an Error value is written as its stack. */
export type LogFields = Record<string, unknown>;

export interface Logger {
  readonly level: LogLevel;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line (a component name, say). */
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  /** Lines below this level are dropped; default `info`. */
  level?: LogLevel;
  /** Where a finished line goes; default `console.error` (stderr on Node, so stdout stays for output). */
  write?: (line: string, level: EntryLevel) => void;
  /** Fields on every line. */
  fields?: LogFields;
  /** Clock of the `time` field (ms since the epoch). */
  now?: () => number;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

function serialize(value: unknown): unknown {
  if (value instanceof Error) return value.stack ?? `${value.name}: ${value.message}`;
  if (typeof value === "bigint") return value.toString();
  return value;
}

/** A JSON-lines logger: `{"time","level","message",...fields}`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? "info";
  const write = options.write ?? ((line: string) => console.error(line));
  const now = options.now ?? Date.now;
  const base = options.fields ?? {};
  const entry = (at: EntryLevel) => (message: string, fields?: LogFields) => {
    if (RANK[at] < RANK[level]) return;
    const record: LogFields = { time: new Date(now()).toISOString(), level: at, message };
    for (const [k, v] of Object.entries({ ...base, ...fields }))
      if (v !== undefined) record[k] = serialize(v);
    write(JSON.stringify(record), at);
  };
  return {
    level,
    debug: entry("debug"),
    info: entry("info"),
    warn: entry("warn"),
    error: entry("error"),
    child: (fields) => createLogger({ ...options, fields: { ...base, ...fields } }),
  };
}

/** A logger that drops everything (tests that assert on other output). */
export const silentLogger: Logger = createLogger({ level: "silent" });

/** A line this logger wrote, as its record; null for any other line. */
export function parseLogLine(line: string): LogFields | null {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof record !== "object" || record === null || Array.isArray(record)) return null;
  const { level, message } = record as LogFields;
  return typeof level === "string" && typeof message === "string" ? (record as LogFields) : null;
}

/**
 * A log record as a line for a person: `12:34:56 edge warn POST /v1/solve 503 gpu_unavailable
 * 12.3 ms`, or `12:34:56 gpu warm start: done blocks=0 ms=1` (the time is UTC, `info` unsaid,
 * an error's stack cut to its first line).
 */
export function readableLogLine(record: LogFields, service: string): string {
  const { time, level, message, ...fields } = record;
  const head = [typeof time === "string" ? time.slice(11, 19) : "", service, level === "info" ? "" : level];
  if (message === "request") {
    const { method, route, status, durationMs, code, requestId: _id, ...rest } = fields;
    return words([...head, `${method} ${route} ${status}`, code, `${durationMs} ms`, ...pairs(rest)]);
  }
  return words([...head, message, ...pairs(fields)]);
}

function pairs(fields: LogFields): string[] {
  return Object.entries(fields).map(([k, v]) => {
    const text = typeof v === "string" ? (v.split("\n")[0] ?? "") : JSON.stringify(v);
    return `${k}=${typeof v === "string" && /\s/.test(text) ? JSON.stringify(text) : text}`;
  });
}

function words(parts: unknown[]): string {
  return parts.filter((p) => p !== "" && p !== undefined).join(" ");
}
