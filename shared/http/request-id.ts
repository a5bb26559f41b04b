/** Request ids: every request gets one, answered in `x-request-id` and named in logs and error bodies. */
import type { MiddlewareHandler } from "hono";

/** Hono environment of the apps that use the toolkit: the request's id. */
export interface RequestIdEnv {
  Variables: { requestId: string };
}

export const REQUEST_ID_HEADER = "x-request-id";
const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Sets `requestId`: the caller's `x-request-id` when `acceptIncoming` and it is well-formed (the
 * edge passes its own id on to the GPU node, so one id follows a request through both), else a
 * fresh UUID.
 */
export function requestId<E extends RequestIdEnv>(
  options: { acceptIncoming?: boolean } = {},
): MiddlewareHandler<E> {
  return async (c, next) => {
    const given = options.acceptIncoming ? c.req.header(REQUEST_ID_HEADER) : undefined;
    const id = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    c.set("requestId", id);
    c.header(REQUEST_ID_HEADER, id);
    await next();
  };
}
