/**
 * What a database error means for the client, as a DomainError: a store that cannot be reached,
 * one that is full, one that is read-only, or one whose disk failed a write. Each answers 503 with
 * its own code, a true message and `Retry-After`, so clients retry a storage condition instead of
 * reading it as a server bug (a generic 500) or as an outage it is not. A query that is wrong is
 * none of these (null: a 500, logged).
 */
import { LibsqlError } from "@libsql/client";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { type DomainError, unavailable } from "../../shared/errors.js";

/** Seconds a client is asked to wait after a database outage. */
export const DATABASE_RETRY_AFTER_S = 5;
/** Seconds a client is asked to wait when the database refuses writes (someone must free space or fix it). */
export const DATABASE_WRITE_RETRY_AFTER_S = 60;

/** libSQL's codes for a store it could not reach or open (not for a failing statement). */
const UNREACHABLE_CODES = new Set([
  "SERVER_ERROR",
  "HRANA_CLOSED_ERROR",
  "HRANA_WEBSOCKET_ERROR",
  "HRANA_PROTO_ERROR",
  "STREAM_EXPIRED",
  "SQLITE_BUSY",
  "SQLITE_CANTOPEN",
]);

/** The storage conditions that refuse writes, by the code a client is answered with. */
export type DatabaseWriteCondition = "database_full" | "database_read_only" | "database_io_error";

const WRITE_MESSAGES: Record<DatabaseWriteCondition, string> = {
  database_full: "The database is full (its disk or its size limit); the request's writes were not stored.",
  database_read_only:
    "The database is read-only (its files or their file system refuse writes); the request's writes were not stored.",
  database_io_error:
    "The database could not write to its files (an I/O error: a disk that refuses writes or fails); the request's writes were not stored.",
};

/**
 * SQLite's primary code (libSQL puts it in `code`; the extended one, e.g. SQLITE_READONLY_DBMOVED
 * or SQLITE_IOERR_WRITE, in `extendedCode`) as a write condition, or null.
 */
function writeCondition(e: LibsqlError): DatabaseWriteCondition | null {
  const code = [e.code, e.extendedCode ?? ""].find((c) => /^SQLITE_(FULL|READONLY|IOERR)/.test(c)) ?? "";
  if (code.startsWith("SQLITE_FULL")) return "database_full";
  if (code.startsWith("SQLITE_READONLY")) return "database_read_only";
  if (code.startsWith("SQLITE_IOERR")) return "database_io_error";
  return null;
}

/** A network failure as fetch reports it (Node's "fetch failed", Workers' network errors). */
const isNetworkFailure = (err: unknown) =>
  err instanceof TypeError && /fetch|network|connect/i.test(err.message);

/** The error and its causes, outermost first. */
function causes(err: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = err; e !== undefined && e !== null && chain.length < 6; e = (e as { cause?: unknown }).cause)
    chain.push(e);
  return chain;
}

/** The write condition `err` reports (full, read-only, I/O error), or null when it is none of these. */
export function databaseWriteCondition(err: unknown): DatabaseWriteCondition | null {
  for (const e of causes(err)) {
    const condition = e instanceof LibsqlError ? writeCondition(e) : null;
    if (condition) return condition;
  }
  return null;
}

/** The 503 of a write condition, with its true message. */
export function databaseWriteError(condition: DatabaseWriteCondition): DomainError {
  return unavailable(condition, WRITE_MESSAGES[condition], DATABASE_WRITE_RETRY_AFTER_S);
}

/**
 * The 503 for a database error a client should be told about (unreachable, full, read-only,
 * I/O error), or null when `err` is not one.
 */
export function databaseFailure(err: unknown): DomainError | null {
  const condition = databaseWriteCondition(err);
  if (condition) return databaseWriteError(condition);
  const chain = causes(err);
  const fromDatabase = chain.some((e) => e instanceof DrizzleQueryError || e instanceof LibsqlError);
  const unreachable =
    chain.some((e) => e instanceof LibsqlError && UNREACHABLE_CODES.has(e.code)) ||
    (fromDatabase && chain.some(isNetworkFailure));
  return unreachable
    ? unavailable(
        "database_unavailable",
        "The database cannot be reached; retry shortly.",
        DATABASE_RETRY_AFTER_S,
      )
    : null;
}
