/**
 * Whether an error means the database cannot be reached (as opposed to a query that is wrong):
 * the edge answers those with 503 `database_unavailable` and `Retry-After`, so clients retry an
 * outage instead of reading it as a server bug.
 */
import { LibsqlError } from "@libsql/client";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { type DomainError, unavailable } from "../../shared/errors.js";

/** Seconds a client is asked to wait after a database outage. */
export const DATABASE_RETRY_AFTER_S = 5;

/** libSQL's codes for a store it could not reach or open (not for a failing statement). */
const UNREACHABLE_CODES = new Set([
  "SERVER_ERROR",
  "HRANA_CLOSED_ERROR",
  "HRANA_WEBSOCKET_ERROR",
  "HRANA_PROTO_ERROR",
  "STREAM_EXPIRED",
  "SQLITE_BUSY",
  "SQLITE_CANTOPEN",
  "SQLITE_IOERR",
  "SQLITE_READONLY",
]);

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

/** The 503 for an unreachable database, or null when `err` is not one. */
export function databaseUnavailable(err: unknown): DomainError | null {
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
