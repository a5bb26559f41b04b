/**
 * `POST /cluster/heartbeat`: a GPU node registers and heartbeats (shared/heartbeat.ts). Signed
 * with the shared GPU secret (the signature middleware of shared/http/signature.ts), not an API
 * key, so it sits outside `/v1` and `/admin`. A node that joins or comes back up, or says it is
 * draining, triggers a rebalance.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { unavailable } from "../../shared/errors.js";
import { heartbeatResultSchema, heartbeatSchema } from "../../shared/heartbeat.js";
import { parseJson } from "../../shared/http/json-body.js";
import { declaredLengthLimit, signatureAuth } from "../../shared/http/signature.js";
import { NonceCache } from "../../shared/signing.js";
import type { AppEnv, Deps } from "../http.js";
import { recordHeartbeat } from "../services/nodes.service.js";
import { errorResponse, jsonBody, ok, routeGroup, serve, serviceRoute } from "./documented.js";

const HEARTBEAT_BODY_BYTES = 8 * 2 ** 20;

const heartbeatRoute = serviceRoute({
  method: "post",
  path: "/cluster/heartbeat",
  summary: "A GPU node registers and heartbeats (signed with the shared GPU secret, not an API key)",
  request: jsonBody(heartbeatSchema),
  responses: {
    200: ok(heartbeatResultSchema),
    400: errorResponse("`invalid_json` or `invalid_request`."),
    401: errorResponse("A missing, invalid, expired or replayed signature (`signature_*`)."),
    413: errorResponse("`body_too_large`."),
    503: errorResponse("`registry_unavailable`: this edge has no GPU secret."),
  },
});

/**
 * The heartbeat's checks, in order: a GPU secret to check with (503), the declared length (413),
 * the signature's headers before the body is read (401), then the body's hash and nonce. The
 * nonces live in memory, so on Node a heartbeat stamped before this edge started may have been
 * accepted by the process before it and is refused. Not on Workers: isolates start and stop at
 * any time and each keeps its own nonces, so the rule would refuse the heartbeat that started an
 * isolate and stop no replay sent to another one; a replayed heartbeat only rewrites what the
 * node already reported, within the signature's 300 s window.
 */
function heartbeatAuth(deps: Deps): MiddlewareHandler[] {
  const secret = deps.config.gpu.secret;
  if (!secret)
    return [
      () => {
        throw unavailable("registry_unavailable", "This edge has no GPU secret to check heartbeats with.");
      },
    ];
  return [
    declaredLengthLimit(HEARTBEAT_BODY_BYTES),
    signatureAuth({
      secret: deps.config.gpu.previousSecret ? [secret, deps.config.gpu.previousSecret] : secret,
      nonces: new NonceCache(),
      maxBodyBytes: HEARTBEAT_BODY_BYTES,
      ...(deps.runtime === "workers" ? {} : { notBeforeS: Math.floor(deps.startedAt / 1000) }),
    }),
  ];
}

/** `POST /cluster/heartbeat` (mounted at the root, before the keyed prefixes). */
export function clusterRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const app = routeGroup();
  serve(
    app,
    heartbeatRoute,
    async (c) => {
      const beat = parseJson(await c.req.text(), heartbeatSchema, { what: "The heartbeat" });
      const { row, intervalMs } = await recordHeartbeat(deps, beat);
      return c.json({ node: { id: row.id, status: row.status }, ...(intervalMs ? { intervalMs } : {}) }, 200);
    },
    heartbeatAuth(deps),
  );
  return app;
}
