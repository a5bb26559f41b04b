/** `POST /v1/solve`. */
import { Hono } from "hono";
import { type AppEnv, type Deps, readJson } from "../http.js";
import { solveRequestSchema } from "../schemas.js";
import { solve } from "../services/solve.service.js";

export function solveRoutes(deps: Deps): Hono<AppEnv> {
  return new Hono<AppEnv>().post("/solve", async (c) => {
    const req = await readJson(c, solveRequestSchema);
    const result = await solve(deps, req, {
      keyId: c.get("principal").keyId,
      requestId: c.get("requestId"),
      startedMs: c.get("startedMs"),
    });
    return c.json(result, 200);
  });
}
