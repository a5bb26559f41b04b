/**
 * Errors to HTTP responses, in one place for both services: a DomainError answers with its status
 * and stable code, a zod validation error is a 400 `invalid_request` listing the issues, and
 * anything else is logged with its stack and answered with a generic 500 that names only the
 * request id.
 */
import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { ZodError } from "zod";
import {
  badRequest,
  DomainError,
  type ErrorBody,
  type ErrorStatus,
  errorBody,
  errorStatus,
} from "../errors.js";
import type { Logger } from "./logger.js";
import type { RequestIdEnv } from "./request-id.js";
import { annotateRequest } from "./request-log.js";
import { validationIssues } from "./zod-issues.js";

export interface ErrorMappingOptions {
  logger: Logger;
  /**
   * Turns an error that is not a DomainError (a failed disk write, say) into one; null when it is
   * not one the service knows. A translated 5xx is logged with the original error.
   */
  translate?: (err: unknown) => DomainError | null;
  /** `WWW-Authenticate` of 401 answers (the edge's bearer realm, say). */
  authenticate?: string;
}

/** An error as the status, JSON body and headers to answer with. */
export interface ErrorAnswer {
  status: ErrorStatus;
  body: ErrorBody;
  headers: Record<string, string>;
}

/** Maps any error to its answer, logging what a client cannot be told. */
export function errorAnswer(
  err: unknown,
  requestId: string | undefined,
  options: ErrorMappingOptions,
  request?: { method: string; path: string },
): ErrorAnswer {
  const translated = err instanceof DomainError ? null : (options.translate?.(err) ?? null);
  const domain = translated ?? toDomainError(err);
  if (!domain) {
    options.logger.error("unhandled error", { requestId, ...request, error: err });
    return {
      status: 500,
      body: { error: { code: "internal_error", message: "Internal server error." }, requestId },
      headers: {},
    };
  }
  // The request's log line names the code; what the client is not told is logged here.
  if (translated && translated.status >= 500)
    options.logger.error("request failed", { requestId, code: translated.code, error: err });
  const headers: Record<string, string> = {};
  if (domain.retryAfterS !== undefined)
    headers["retry-after"] = String(Math.max(1, Math.ceil(domain.retryAfterS)));
  // A permanent refusal: clients that retry 5xx by default (the openai and anthropic SDKs) honour this.
  if (domain.status === 501) headers["x-should-retry"] = "false";
  if (domain.status === 401 && options.authenticate) headers["www-authenticate"] = options.authenticate;
  return { status: domain.status, body: errorBody(domain, requestId), headers };
}

function toDomainError(err: unknown): DomainError | null {
  if (err instanceof DomainError) return err;
  if (err instanceof ZodError)
    return badRequest("invalid_request", "The request failed validation.", { issues: validationIssues(err) });
  if (err instanceof HTTPException && err.status < 500) {
    const code = err.status === 413 ? "body_too_large" : "http_error";
    return new DomainError(errorStatus(err.status, 400), code, err.message || "Request rejected.");
  }
  return null;
}

/** The app's `onError`: every error answered as JSON by `errorAnswer`. */
export function onError<E extends RequestIdEnv>(options: ErrorMappingOptions): ErrorHandler<E> {
  return (err, c) => {
    const answer = errorAnswer(err, requestIdOf(c), options, { method: c.req.method, path: c.req.path });
    annotateRequest(c, { code: answer.body.error.code });
    for (const [name, value] of Object.entries(answer.headers)) c.header(name, value);
    return c.json(answer.body, answer.status);
  };
}

/** The app's `notFound`: 404 with `code` naming the method and path. */
export function routeNotFound<E extends RequestIdEnv>(code = "route_not_found"): NotFoundHandler<E> {
  return (c) =>
    c.json(
      { error: { code, message: `No route for ${c.req.method} ${c.req.path}.` }, requestId: requestIdOf(c) },
      404,
    );
}

function requestIdOf(c: Context): string | undefined {
  return (c.var as { requestId?: string }).requestId;
}
