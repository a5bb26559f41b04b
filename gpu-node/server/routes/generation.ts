/** Model work on the request path: `/v1/graft`, `/v1/generate` (JSON or SSE) and `/v1/solve`. */
import type { Hono } from "hono";
import { generateRequestSchema, graftRequestSchema } from "../../../shared/protocol.js";
import { solveRequestSchema } from "../../../shared/solve-protocol.js";
import { notImplemented } from "../../errors.js";
import { type GpuEnv, jsonBody, type ServerContext } from "../context.js";

export function generationRoutes(app: Hono<GpuEnv>, ctx: ServerContext): void {
  const { blocks, work } = ctx;
  app.post("/v1/graft", async (c) => {
    const req = await jsonBody(c, graftRequestSchema);
    return work.generation(c, "graft", req.stream, (o) =>
      blocks.graft(req.blockId, req.query, {
        maxTokens: req.maxTokens,
        ...(req.sampling ? { sampling: req.sampling } : {}),
        ...(req.acceptEngineMismatch ? { acceptEngineMismatch: true } : {}),
        ...o,
      }),
    );
  });
  app.post("/v1/generate", async (c) => {
    const req = await jsonBody(c, generateRequestSchema);
    return work.generation(c, "generate", req.stream, (o) =>
      blocks.generate(req.prompt, {
        maxTokens: req.maxTokens,
        ...(req.sampling ? { sampling: req.sampling } : {}),
        ...o,
      }),
    );
  });
  app.post("/v1/solve", async (c) => {
    const req = await jsonBody(c, solveRequestSchema);
    const solver = ctx.solver;
    if (!solver) throw notImplemented("sandbox_unavailable", "this node has no sandbox, so it cannot solve");
    if (req.stream) return work.solveStream(c, (signal, onToken) => solver.solve(req, signal, onToken));
    const result = await work.run(c, (signal) => solver.solve(req, signal), {
      background: req.priority === "background",
    });
    ctx.metrics.recordTokens("solve", result);
    return c.json(result);
  });
}
