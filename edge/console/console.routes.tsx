/**
 * The web console under `/console`: server-rendered pages (hono/jsx) over the same services as the
 * API. Signing in posts the key once; it then travels in the console's own cookie (session.ts).
 * Every form post is CSRF-checked (Hono's `csrf`: the Origin must be this site) on top of the
 * SameSite=Strict cookie, and every page carries strict security headers with a content security
 * policy that runs only this site's script files. Admin pages and actions refuse public keys with
 * 403 on the server; the navigation also hides them. The public pages are here, the admin ones in
 * console-admin.routes.tsx.
 */
import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { csrf } from "hono/csrf";
import { secureHeaders } from "hono/secure-headers";
import { z } from "zod";
import { DomainError, tooLarge } from "../../shared/errors.js";
import { routeOf } from "../../shared/http/request-log.js";
import { LIMITS } from "../../shared/protocol.js";
import { getLibraryItem, listLibrary } from "../db/library-pages.js";
import { problemHits } from "../db/query-stats.js";
import type { AppEnv, Deps } from "../http.js";
import { solveRequestSchema } from "../schemas.js";
import { solve } from "../services/solve.service.js";
import { adminConsoleRoutes } from "./console-admin.routes.js";
import { ErrorPage } from "./pages/error.js";
import { LibraryItemPage, type LibraryItemView, LibraryListPage } from "./pages/library.js";
import { PlaygroundPage } from "./pages/playground.js";
import { SignInPage } from "./pages/signin.js";
import { blockPlacements } from "./placements.js";
import { streamAsk } from "./playground-stream.js";
import { CONSOLE_PATH, checkKey, consoleSession, endSession, isAdmin, startSession } from "./session.js";

const EXAMPLES = 6;
const CHUNK_PATH = /^\/console\/uploads\/imports\/[^/]+\/chunks\/\d+$/;

/** The console's pages and actions, to mount at `/console`. */
export function consoleRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(
    "*",
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", "data:"],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
    }),
  );
  const limit = (maxSize: number) =>
    bodyLimit({
      maxSize,
      onError: () => {
        throw tooLarge("body_too_large", `The request body is larger than ${maxSize} bytes.`);
      },
    });
  const formLimit = limit(deps.config.limits.publicBodyBytes);
  // Block upload chunks (admin only, checked after the session) are the one large body.
  const chunkLimit = limit(LIMITS.importChunkBytes);
  app.use("*", csrf(), (c, next) => (CHUNK_PATH.test(c.req.path) ? chunkLimit(c, next) : formLimit(c, next)));

  app.get("/", (c) => c.redirect(`${CONSOLE_PATH}/playground`, 303));
  app.get("/signin", (c) => c.html(<SignInPage />));
  app.post("/signin", async (c) => {
    const form = await c.req.parseBody();
    const key = typeof form.key === "string" ? form.key : "";
    try {
      await checkKey(deps, key);
    } catch (err) {
      if (err instanceof DomainError && err.status === 401)
        return c.html(<SignInPage error="This key is not valid (unknown, revoked or mistyped)." />, 401);
      throw err;
    }
    startSession(c, key);
    return c.redirect(`${CONSOLE_PATH}/playground`, 303);
  });
  app.post("/signout", (c) => {
    endSession(c);
    return c.redirect(`${CONSOLE_PATH}/signin`, 303);
  });

  app.use("*", consoleSession(deps));
  // A console address no page answers: a page that says so, with the navigation, instead of the
  // API's JSON 404. (A middleware, not a catch-all route, so each page's log line keeps its route.)
  app.use("*", async (c, next) => {
    if (c.req.method !== "GET" || routeOf(c) !== "unmatched") return next();
    throw new DomainError(404, "page_not_found", `There is no console page at ${c.req.path}.`);
  });
  const examples = async () =>
    (await listLibrary(deps.db, { limit: EXAMPLES })).items.map((item) => item.problem);

  app.get("/playground", async (c) =>
    c.html(<PlaygroundPage admin={isAdmin(c)} examples={await examples()} />),
  );
  app.post("/playground", async (c) => {
    const form = await c.req.parseBody();
    const problem = typeof form.problem === "string" ? form.problem : "";
    const parsed = solveRequestSchema.safeParse({ problem, ...(form.mode ? { mode: form.mode } : {}) });
    const mode = typeof form.mode === "string" ? form.mode : "auto";
    const page = async (
      extra: { result?: Awaited<ReturnType<typeof solve>>; error?: string },
      status: 200 | 400 | 503 = 200,
    ) =>
      c.html(
        <PlaygroundPage
          admin={isAdmin(c)}
          examples={await examples()}
          problem={problem}
          mode={mode}
          {...extra}
        />,
        status,
      );
    if (!parsed.success)
      return page({ error: `The problem is not valid: ${z.prettifyError(parsed.error)}` }, 400);
    try {
      const result = await solve(deps, parsed.data, {
        keyId: c.get("principal").keyId,
        requestId: c.get("requestId"),
        startedMs: c.get("startedMs"),
      });
      return page({ result });
    } catch (err) {
      if (err instanceof DomainError && err.status >= 500) return page({ error: err.message }, 503);
      throw err;
    }
  });

  // The page's script asks here to show the answer as it is generated (console.js).
  app.post("/playground/stream", async (c) => {
    const form = await c.req.parseBody();
    const req = solveRequestSchema.parse({
      problem: typeof form.problem === "string" ? form.problem : "",
      ...(form.mode ? { mode: form.mode } : {}),
    });
    return streamAsk(deps, c, req);
  });

  app.get("/library", async (c) => {
    const q = c.req.query("q")?.trim() ?? "";
    const cursor = c.req.query("cursor") ?? null;
    const page = await listLibrary(deps.db, { limit: 20, cursor, q: q || null });
    return c.html(<LibraryListPage admin={isAdmin(c)} q={q} page={page} />);
  });
  app.get("/library/:id", async (c) => {
    const item = await getLibraryItem(deps.db, c.req.param("id"));
    if (!item) throw new DomainError(404, "problem_not_found", "No library entry with this id.");
    const view: LibraryItemView = {
      item,
      hits: await problemHits(deps.db, item.problem.id),
      placements: isAdmin(c)
        ? await blockPlacements(
            deps,
            item.blocks.map((b) => b.sha256),
          )
        : null,
    };
    return c.html(<LibraryItemPage admin={isAdmin(c)} view={view} />);
  });

  app.route("/", adminConsoleRoutes(deps));

  app.onError(renderConsoleError);
  return app;
}

const adminOrNull = (c: Parameters<typeof isAdmin>[0]) => (c.get("principal") ? isAdmin(c) : null);

/** A console error as a page: 4xx with its message; anything else goes to the app's JSON handler. */
function renderConsoleError(err: Error, c: Context<AppEnv>) {
  if (err instanceof z.ZodError)
    return c.html(
      <ErrorPage status={400} code="invalid_request" message={z.prettifyError(err)} admin={adminOrNull(c)} />,
      400,
    );
  if (!(err instanceof DomainError) || err.status >= 500) throw err;
  if (err.retryAfterS !== undefined) c.header("retry-after", String(err.retryAfterS));
  return c.html(
    <ErrorPage status={err.status} code={err.code} message={err.message} admin={adminOrNull(c)} />,
    err.status as 400,
  );
}
