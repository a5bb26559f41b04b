/**
 * `POST /cluster/heartbeat`: a GPU node registers and heartbeats (shared/heartbeat.ts). Signed
 * with the shared GPU secret (shared/signing.ts), not an API key, so it sits outside `/v1` and
 * `/admin`. A node that joins or comes back up, or says it is draining, triggers a rebalance.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { readBounded } from "../../shared/body.js";
import { badRequest, tooLarge, unauthorized, unavailable } from "../../shared/errors.js";
import { sha256Hex } from "../../shared/hash.js";
import { heartbeatResultSchema, heartbeatSchema } from "../../shared/heartbeat.js";
import {
  NonceCache,
  SIGNATURE_HEADERS,
  verifySignatureHeaders,
  verifySignedBody,
} from "../../shared/signing.js";
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

/** `POST /cluster/heartbeat` (mounted at the root, before the keyed prefixes). */
export function clusterRoutes(deps: Deps): OpenAPIHono<AppEnv> {
  const nonces = new NonceCache();
  const app = routeGroup();
  serve(app, heartbeatRoute, async (c) => {
    const secret = deps.config.gpu.secret;
    if (!secret)
      throw unavailable("registry_unavailable", "This edge has no GPU secret to check heartbeats with.");
    const tooBig = () => tooLarge("body_too_large", "The heartbeat is too large.");
    if (!c.req.header("transfer-encoding") && Number(c.req.header("content-length")) > HEARTBEAT_BODY_BYTES)
      throw tooBig();
    // The signature's headers first: an unsigned request is refused before its body is read.
    const url = new URL(c.req.url);
    const signed = await verifySignatureHeaders({
      secret,
      method: c.req.method,
      path: `${url.pathname}${url.search}`,
      headers: (name) => c.req.header(name),
    });
    if (!signed.ok) throw unauthorized(signed.code, signed.message);
    // The nonces live in memory (a Worker has no disk): a heartbeat stamped before this edge
    // started may have been accepted by the process before it, so it is refused.
    if (Number(c.req.header(SIGNATURE_HEADERS.timestamp)) < Math.floor(deps.startedAt / 1000))
      throw unauthorized("signature_replayed", "The heartbeat was signed before this edge started.");
    const body = await readBounded(c.req.raw.body, HEARTBEAT_BODY_BYTES);
    if (!body) throw tooBig();
    const verdict = verifySignedBody(signed, await sha256Hex(body), nonces);
    if (!verdict.ok) throw unauthorized(verdict.code, verdict.message);
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder().decode(body));
    } catch {
      throw badRequest("invalid_json", "The heartbeat is not valid JSON.");
    }
    const beat = heartbeatSchema.parse(json);
    const { row, intervalMs } = await recordHeartbeat(deps, beat);
    return c.json({ node: { id: row.id, status: row.status }, ...(intervalMs ? { intervalMs } : {}) }, 200);
  });
  return app;
}
