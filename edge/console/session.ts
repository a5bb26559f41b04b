/**
 * The console's sign-in. The API key is posted once by the sign-in form and kept in an HttpOnly,
 * SameSite=Strict cookie scoped to `/console` (Secure over https), so it never appears in a URL or
 * in page script; the cookie is accepted by the console pages only, never by `/v1` or `/admin`,
 * which keep taking the key as a bearer header. Every console request checks the key as the API
 * does (a revoked key is signed out at once) and spends one unit of its rate limit.
 */
import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { DomainError, tooManyRequests } from "../../shared/errors.js";
import type { AppEnv, Deps } from "../http.js";
import { authenticateBearer, type Principal, requireRole } from "../services/keys.service.js";

/** The cookie that holds the signed-in key. */
export const SESSION_COOKIE = "kvgraft_console";
/** Where the console lives; the cookie is sent to these paths only. */
export const CONSOLE_PATH = "/console";
/** A sign-in lasts a working day at most; signing in again renews it. */
const SESSION_MAX_AGE_S = 12 * 3600;

/** Checks a key as `/v1` does (401 for a missing, malformed, unknown or revoked key). */
export function checkKey(deps: Pick<Deps, "db">, key: string): Promise<Principal> {
  return authenticateBearer(deps.db, `Bearer ${key.trim()}`);
}

/** Stores the key in the session cookie (Secure when the console is reached over https). */
export function startSession(c: Context, key: string): void {
  setCookie(c, SESSION_COOKIE, key.trim(), {
    path: CONSOLE_PATH,
    httpOnly: true,
    sameSite: "Strict",
    secure: new URL(c.req.url).protocol === "https:",
    maxAge: SESSION_MAX_AGE_S,
  });
}

/** Forgets the key. */
export function endSession(c: Context): void {
  deleteCookie(c, SESSION_COOKIE, { path: CONSOLE_PATH });
}

/**
 * Requires a signed-in key: without one (or with one no longer valid) the browser is sent to the
 * sign-in page; with one, the principal is set and one unit of the key's rate limit is spent.
 */
export function consoleSession(deps: Pick<Deps, "db" | "rateLimiter">): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const key = getCookie(c, SESSION_COOKIE);
    let principal: Principal;
    try {
      if (key === undefined) throw new DomainError(401, "auth_missing", "Sign in first.");
      principal = await checkKey(deps, key);
    } catch (err) {
      if (!(err instanceof DomainError) || err.status !== 401) throw err;
      endSession(c);
      return c.redirect(`${CONSOLE_PATH}/signin`, 303);
    }
    const verdict = await deps.rateLimiter.limit(principal.keyId);
    if (!verdict.success)
      throw tooManyRequests("rate_limited", "Too many requests for this API key.", verdict.retryAfterS);
    c.set("principal", principal);
    await next();
  };
}

/** Refuses a public key on an admin page or action (403 `forbidden_role`), whatever the method. */
export const consoleAdminOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  requireRole(c.get("principal"), "admin");
  await next();
};

/** Whether the signed-in key is an admin key (the layout shows the admin pages' links then). */
export const isAdmin = (c: Context<AppEnv>): boolean => c.get("principal")?.role === "admin";
