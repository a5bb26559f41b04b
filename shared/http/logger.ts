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
