/**
 * The edge's Hono app, one factory for both runtimes: the Node entry (edge/runtime/node.ts) and
 * the Workers entry (edge/runtime/worker.ts) build its dependencies and hand them in.
 *
 * Layout: `/health` and `/openapi.json` are open; `/v1/*` needs an API key and `/admin/*` an admin
 * key (deny by default: auth runs on the prefix before routing); both are rate-limited per key and
 * have a body limit. One `onError` maps every error to a JSON body. A path that has routes, asked
 * with another method, is a 405 `method_not_allowed` with an `Allow` header; any other path a 404.
 * Every route documents itself (edge/routes/documented.ts) into /openapi.json. The web console
 * (`/console`, HTML pages with a cookie session) is outside the API and its document.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { PatternRouter } from "hono/router/pattern-router";
import { DomainError, errorBody, tooLarge } from "../shared/errors.js";
import { onError, routeNotFound } from "../shared/http/errors.js";
import { createLogger } from "../shared/http/logger.js";
import { requestId } from "../shared/http/request-id.js";
import { requestLog } from "../shared/http/request-log.js";
import { requireKey } from "./auth.js";
import { consoleRoutes } from "./console/console.routes.js";
import { databaseFailure } from "./db/availability.js";
import { DatabaseWrites } from "./db/write-state.js";
import { type AppDeps, type AppEnv, type Deps, systemClock } from "./http.js";
import { adminRoutes } from "./routes/admin.routes.js";
import { clusterRoutes } from "./routes/cluster.routes.js";
import { flywheelRoutes } from "./routes/flywheel.routes.js";
import { healthRoutes } from "./routes/health.routes.js";
import { libraryRoutes } from "./routes/library.routes.js";
import { nodeAdminRoutes } from "./routes/nodes.routes.js";
import { openAIErrors, openAIRoutes } from "./routes/openai.routes.js";
import { serveOpenApiDocument } from "./routes/openapi.js";
import { solveRoutes } from "./routes/solve.routes.js";

export type { AppDeps } from "./http.js";

/** Builds the app from its dependencies (the runtime entries open the database and the GPU client). */
export function createApp(input: AppDeps): OpenAPIHono<AppEnv> {
  const clock = input.clock ?? systemClock;
  const deps: Deps = {
    db: input.db,
    gpu: input.gpu,
    rateLimiter: input.rateLimiter,
    config: input.config,
    clock,
    logger: input.logger ?? createLogger({ level: input.config.logLevel }),
    runtime: input.runtime ?? "unknown",
    startedAt: clock.now(),
    writes: new DatabaseWrites(() => clock.now()),
  };
  const limit = (maxSize: number) =>
    bodyLimit({
      maxSize,
      onError: () => {
        throw tooLarge("body_too_large", `The request body is larger than ${maxSize} bytes.`);
      },
    });

  const app = new OpenAPIHono<AppEnv>();
  const noRoute = routeNotFound<AppEnv>();
  // A fresh id for every request (a client's own x-request-id is not trusted), then its log line;
  // health probes are logged at debug.
  app.use("*", requestId());
  app.use("*", requestLog(deps.logger, { skip: (c) => c.req.path === "/health" }));
  app.use("*", async (c, next) => {
    c.set("startedMs", clock.monotonicMs());
    c.header("cache-control", "no-store");
    await next();
  });

  app.route("/", healthRoutes(deps));
  serveOpenApiDocument(app);
  // GPU node heartbeats: signed with the GPU secret, not keyed.
  app.route("/", clusterRoutes(deps));

  // The OpenAI-compatible routes answer errors (auth included) in OpenAI's shape.
  app.use("/v1/chat/*", openAIErrors);
  app.use("/v1/models", openAIErrors);
  app.use("/v1/models/*", openAIErrors);
  app.use("/v1/*", requireKey(deps, "public"), limit(deps.config.limits.publicBodyBytes));
  app.use("/admin/*", requireKey(deps, "admin"), limit(deps.config.limits.adminBodyBytes));
  app.route("/v1", solveRoutes(deps));
  app.route("/v1", libraryRoutes(deps));
  app.route("/v1", openAIRoutes(deps));
  app.route("/admin", nodeAdminRoutes(deps));
  app.route("/admin", adminRoutes(deps));
  app.route("/admin/flywheel", flywheelRoutes(deps));
  // The web console: its own cookie session, not the bearer keys above (edge/console/).
  const assets = input.consoleAssets;
  if (assets)
    app.get("/console/assets/:name", (c) => {
      const file = assets(c.req.param("name"));
      if (!file) return noRoute(c);
      return c.body(file.body, 200, { "content-type": file.type, "cache-control": "public, max-age=3600" });
    });
  app.route("/console", consoleRoutes(deps));

  const allowedAt = allowedMethods(app);
  app.notFound((c) => {
    const allowed = allowedAt(c.req.path);
    if (allowed.length === 0) return noRoute(c);
    c.header("Allow", allowed.join(", "));
    const error = new DomainError(
      405,
      "method_not_allowed",
      `${c.req.path} answers ${allowed.join(", ")}, not ${c.req.method}.`,
      { allow: allowed },
    );
    return c.json(errorBody(error, c.get("requestId")), 405);
  });
  app.onError(
    onError({
      logger: deps.logger,
      authenticate: 'Bearer realm="kvgraft"',
      // A write refused by a storage condition is remembered for /health.
      translate: (err) => {
        deps.writes.refused(err);
        return databaseFailure(err);
      },
    }),
  );
  return app;
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/**
 * The methods the app's routes answer at a path (middleware, registered for every method, does
 * not count); GET brings HEAD, which Hono answers with the GET route. Built from the routes
 * registered so far: call it after the last route.
 */
function allowedMethods(app: OpenAPIHono<AppEnv>): (path: string) => string[] {
  const router = new PatternRouter<string>();
  for (const route of app.routes)
    if (route.method !== "ALL") router.add(route.method, route.path, route.method);
  return (path) => {
    const allowed: string[] = METHODS.filter((m) => router.match(m, path)[0].length > 0);
    return allowed.includes("GET") ? [...allowed, "HEAD"] : allowed;
  };
}
