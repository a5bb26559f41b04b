/** `GET /health` (open: load balancers and the edge read it) and `GET /metrics` (signed). */
import type { Hono } from "hono";
import type { Health } from "../../../shared/protocol.js";
import type { GpuEnv, ServerContext } from "../context.js";

export function healthRoute(app: Hono<GpuEnv>, ctx: ServerContext): void {
  const { options } = ctx;
  app.get("/health", (c) => {
    const s = ctx.blocks.snapshot();
    const draining = ctx.tracker.draining;
    const storage = ctx.storage.health();
    const health: Health = {
      status: draining ? "draining" : s.slots.retired > 0 || storage.status !== "ok" ? "degraded" : "ok",
      model: options.fingerprints.model,
      engine: options.fingerprints.engine,
      slots: s.slots,
      tiers: { hot: s.hot, warm: s.warm, coldCount: s.coldCount, bytes: s.bytes },
      queue: { depth: ctx.queue.depth, capacity: ctx.queue.capacity },
      sandbox: options.sandbox
        ? { isolation: options.sandbox.isolation }
        : { isolation: "none", reason: ctx.noSandbox },
      warmStart: s.warmStart,
      warmBytes: { used: s.warmBytes, budget: s.warmBudgetBytes },
      uptimeS: Math.round((Date.now() - ctx.started) / 1000),
      storage,
    };
    // 503 while draining tells load balancers to stop sending; the body says why.
    return c.json(health, draining ? 503 : 200);
  });
}

export function metricsRoute(app: Hono<GpuEnv>, ctx: ServerContext): void {
  app.get("/metrics", async (c) =>
    c.body(await ctx.metrics.render(), 200, { "content-type": ctx.metrics.contentType }),
  );
}
