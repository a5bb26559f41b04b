/**
 * Domain errors with stable machine codes: the one error type of both services and of the GPU
 * client (whose `GpuError` is a DomainError the node answered). Services map them to HTTP in one
 * `onError` (shared/http/errors.ts); anything that is not a DomainError is logged and becomes a
 * generic 500.
 */
import type { ClientErrorStatusCode, ServerErrorStatusCode } from "hono/utils/http-status";

/** The HTTP statuses an error maps to: 4xx and 5xx. */
export type ErrorStatus = ClientErrorStatusCode | ServerErrorStatusCode;

/** `status` when it is a 4xx or 5xx, else `fallback` (an upstream that answered 3xx, say). */
export function errorStatus(status: number, fallback: ErrorStatus = 502): ErrorStatus {
  return Number.isInteger(status) && status >= 400 && status <= 599 ? (status as ErrorStatus) : fallback;
}

export class DomainError extends Error {
  override name = "DomainError";
  constructor(
    /** HTTP status the error maps to. */
    readonly status: ErrorStatus,
    /** Stable, machine-readable code, e.g. `block_not_found`. */
    readonly code: string,
    message: string,
    /** Extra fields for the error body (never secrets). */
    readonly details?: Record<string, unknown>,
    /** Seconds a client should wait before retrying (429/503). */
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

/** 400: the request is malformed or fails validation. */
export const badRequest = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError(400, code, message, details);
/** 401: missing or invalid credentials. */
export const unauthorized = (code: string, message: string) => new DomainError(401, code, message);
/** 403: valid credentials without the needed role. */
export const forbidden = (code: string, message: string) => new DomainError(403, code, message);
/** 404: the named resource does not exist. */
export const notFound = (code: string, message: string) => new DomainError(404, code, message);
/**
 * 409: the request conflicts with current state (fingerprint mismatch, duplicate), or a stored
 * block fails its checks and was quarantined: `block_corrupt` (file hash), `block_probe_mismatch`
 * (the restored state does not reproduce the manifest's probe hash).
 */
export const conflict = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError(409, code, message, details);
/** 413: body or query over its size limit. */
export const tooLarge = (code: string, message: string) => new DomainError(413, code, message);
/** 422: well-formed but rejected on its merits (a program whose output differs, say). */
export const unprocessable = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError(422, code, message, details);
/** 429: a rate limit or a full queue; retry after the given seconds. */
export const tooManyRequests = (code: string, message: string, retryAfterS: number) =>
  new DomainError(429, code, message, undefined, retryAfterS);
/**
 * 501: this deployment cannot do what the request needs at all (no sandbox can run here, say): a
 * permanent refusal, so never with Retry-After, and answered with `x-should-retry: false`.
 */
export const notImplemented = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError(501, code, message, details);
/** 503: the service (or the one behind it) cannot take the request now. */
export const unavailable = (code: string, message: string, retryAfterS?: number) =>
  new DomainError(503, code, message, undefined, retryAfterS);

/** JSON body every service returns for an error. */
export interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
  requestId?: string;
}

/** The error body for a DomainError. */
export function errorBody(err: DomainError, requestId?: string): ErrorBody {
  return {
    error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) },
    ...(requestId ? { requestId } : {}),
  };
}
