/**
 * Routes that document themselves: each route is one `createRoute` definition (path, method,
 * request schemas, responses) that both serves and documents it, so a served route cannot be left
 * out of /openapi.json. Request bodies, queries and path parameters are validated in the handlers
 * (readJson/readQuery) with the same schemas the definition documents, so errors keep the edge's
 * own codes (`invalid_json`, `invalid_request`) instead of the validator's.
 */
import { createRoute, OpenAPIHono, type RouteConfig, z } from "@hono/zod-openapi";
import type { Context, Handler, MiddlewareHandler } from "hono";
import { every } from "hono/combine";
import { errorBodySchema } from "../../shared/protocol.js";
import type { AppEnv } from "../http.js";

/** A group of documented routes; the app mounts it with `app.route(prefix, group)`. */
export const routeGroup = (): OpenAPIHono<AppEnv> => new OpenAPIHono<AppEnv>();

/** Documents `route` and serves it with `handler`, after the route's own `middleware` (authentication, say). */
export function serve(
  app: OpenAPIHono<AppEnv>,
  route: RouteConfig,
  handler: Handler<AppEnv>,
  middleware: MiddlewareHandler[] = [],
): void {
  app.openAPIRegistry.registerPath(route);
  app.on(
    route.method.toUpperCase(),
    route.path.replaceAll(/\/{(.+?)}/g, "/:$1"),
    every(...middleware),
    handler,
  );
}

/** A JSON response (or request body) content of `schema`. */
export const jsonContent = (schema: z.ZodType) => ({ "application/json": { schema } });

/** A success response with a JSON body. */
export const ok = (schema: z.ZodType, description = "Success") => ({
  description,
  content: jsonContent(schema),
});

/** A required JSON request body. */
export const jsonBody = (schema: z.ZodType) => ({ body: { required: true, content: jsonContent(schema) } });

/** A path parameter `id`. */
export const idParams = (description: string) => ({
  params: z.object({ id: z.string().describe(description) }),
});

/** An error response (the edge's one error body): `description` names the codes. */
export const errorResponse = (description: string) => ({
  description,
  content: jsonContent(errorBodySchema),
});

/** The errors every keyed route can answer (admin routes add 403). */
export function authErrors(admin: boolean) {
  return {
    400: errorResponse("`invalid_json` or `invalid_request` (details.issues lists what failed)."),
    401: errorResponse("`auth_missing`, `auth_malformed`, `auth_invalid` or `auth_revoked`."),
    ...(admin ? { 403: errorResponse("`forbidden_role`: the key is not an admin key.") } : {}),
    413: errorResponse("`body_too_large`."),
    429: errorResponse("`rate_limited`; see the Retry-After header."),
  };
}

/** The errors of a call that reaches a GPU node. */
export const gpuErrors = {
  501: errorResponse(
    "`sandbox_unavailable`: the GPU node runs no programs; permanent, so no Retry-After and `x-should-retry: false`.",
  ),
  502: errorResponse("`gpu_bad_response`: the GPU node answered something the edge cannot use."),
  503: errorResponse("`gpu_unavailable`: no GPU node reachable (Retry-After)."),
  504: errorResponse("`gpu_timeout`: the GPU node did not answer in time."),
};

/** The `id` path parameter (every route that reads it has one in its path). */
export const pathId = (c: Context<AppEnv>): string => c.req.param("id") ?? "";

type RouteSpec = Omit<RouteConfig, "tags" | "security">;

/** A keyed route of the public API (`/v1`): tagged `public`, with the auth errors beside its own. */
export const publicRoute = (spec: RouteSpec) =>
  createRoute({ ...spec, tags: ["public"], responses: { ...authErrors(false), ...spec.responses } });

/** A route of the admin API (`/admin`): tagged `admin`, with the auth errors beside its own. */
export const adminRoute = (spec: RouteSpec) =>
  createRoute({ ...spec, tags: ["admin"], responses: { ...authErrors(true), ...spec.responses } });

/** An open service route (no key): tagged `service`, no security requirement. */
export const serviceRoute = (spec: RouteSpec) => createRoute({ ...spec, tags: ["service"], security: [] });
