/** `POST /v1/sandbox/run`: one program in the sandbox, behind the sandbox's own admission queue. */
import type { Hono } from "hono";
import { sandboxRunRequestSchema } from "../../../shared/protocol.js";
import { notImplemented } from "../../errors.js";
import { type GpuEnv, jsonBody, type ServerContext } from "../context.js";

export function sandboxRoutes(app: Hono<GpuEnv>, ctx: ServerContext): void {
  app.post("/v1/sandbox/run", async (c) => {
    const req = await jsonBody(c, sandboxRunRequestSchema);
    const sandbox = ctx.options.sandbox;
    if (!sandbox) throw notImplemented("sandbox_unavailable", `this node runs no programs: ${ctx.noSandbox}`);
    ctx.tracker.assertAccepting();
    // The sandbox's own queue: the request's deadline bounds the wait (504), a full queue is a 429.
    const signals = ctx.work.signals(c);
    const job = {
      source: req.program,
      params: req.params,
      ...(req.expect !== undefined ? { expect: req.expect } : {}),
    };
    const r = await sandbox.runProgram(job, signals.signal).catch((err: unknown) => {
      throw ctx.work.abortError(err, signals);
    });
    const { verdict, stdout, stderr, exitCode, cpuMs, wallMs, isolation, answer } = r;
    return c.json({ verdict, stdout, stderr, exitCode, cpuMs, wallMs, isolation, answer });
  });
}
