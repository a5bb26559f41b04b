/**
 * The flywheel as a configuration switch, and its idle worker: a real edge (Node entry, libSQL
 * file) on loopback. `mode: "library"` answers without a GPU node (source none, unverified), which
 * is exactly what the flywheel queues when it is on.
 */
import { getEventListeners } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type EdgeContext, readEdgeConfig } from "../edge/config.js";
import { flywheelQueue } from "../edge/db/schema.js";
import { systemClock } from "../edge/http.js";
import { startEdgeServer } from "../edge/runtime/node.js";
import { startFlywheelWorker, withFlywheelWorker } from "../edge/services/flywheel-worker.js";
import { ConfigError } from "../shared/http/config.js";
import { silentLogger } from "../shared/http/logger.js";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

const dirs: string[] = [];
const closers: (() => Promise<void>)[] = [];

afterAll(async () => {
  for (const close of closers) await close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function edge(env: Record<string, string>, context: EdgeContext = {}) {
  const dir = mkdtempSync(join(tmpdir(), "kvgraft-flywheel-switch-"));
  dirs.push(dir);
  const e = await startEdgeServer({
    env: { LIBSQL_URL: `file:${join(dir, "edge.db")}`, ...env },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
    context,
  });
  closers.push(() => e.close());
  const key = e.generatedAdminKey as string;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${e.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  return { edge: e, api };
}

describe("the flywheel switch (KVGRAFT_FLYWHEEL)", () => {
  it("auto is off with the generated model and on otherwise; on and off win; others are refused", () => {
    const env = { LIBSQL_URL: "file:x.db" };
    expect(readEdgeConfig(env, { syntheticModel: true }).flywheel).toMatchObject({
      enabled: false,
      setting: "auto",
    });
    expect(readEdgeConfig(env, { syntheticModel: false }).flywheel.enabled).toBe(true);
    expect(readEdgeConfig(env).flywheel.enabled).toBe(true);
    expect(
      readEdgeConfig({ ...env, KVGRAFT_FLYWHEEL: "on" }, { syntheticModel: true }).flywheel.enabled,
    ).toBe(true);
    expect(readEdgeConfig({ ...env, KVGRAFT_FLYWHEEL: "off" }).flywheel.enabled).toBe(false);
    expect(() => readEdgeConfig({ ...env, KVGRAFT_FLYWHEEL: "yes" })).toThrow(ConfigError);
    expect(() => readEdgeConfig({ ...env, KVGRAFT_FLYWHEEL_IDLE_MS: "0" })).toThrow(
      /KVGRAFT_FLYWHEEL_IDLE_MS/,
    );
  });

  it("off: an unverified answer queues nothing, admins cannot queue, no worker starts", async () => {
    const { edge: e, api } = await edge({}, { syntheticModel: true });
    const solved = await api("POST", "/v1/solve", { problem: "What is 3 plus 4?", mode: "library" });
    expect(solved.status).toBe(200);
    expect(solved.body).toMatchObject({ source: "none", verified: false, queued: false });
    const enqueued = await api("POST", "/admin/flywheel", { problem: "What is 3 plus 4?" });
    expect(enqueued.status).toBe(409);
    expect(enqueued.body.error).toMatchObject({ code: "flywheel_disabled", details: { setting: "auto" } });
    expect(enqueued.body.error.message).toContain("KVGRAFT_FLYWHEEL=on");
    expect(await e.db.select().from(flywheelQueue)).toEqual([]);
    const listed = await api("GET", "/admin/flywheel");
    expect(listed.body).toMatchObject({ enabled: false, setting: "auto", running: [], items: [] });
    // No worker is attached: close stays the edge's own.
    const close = e.close;
    expect(withFlywheelWorker(e).close).toBe(close);
  });

  it("on: the same answer is queued once", async () => {
    const { edge: e, api } = await edge({ KVGRAFT_FLYWHEEL: "on" }, { syntheticModel: true });
    const solved = await api("POST", "/v1/solve", { problem: "What is 3 plus 4?", mode: "library" });
    expect(solved.body).toMatchObject({ source: "none", queued: true });
    expect(await e.db.select().from(flywheelQueue)).toHaveLength(1);
    expect((await api("GET", "/admin/flywheel")).body).toMatchObject({
      enabled: true,
      setting: "on",
      progress: { queued: 1 },
    });
  });
});

describe("an idle flywheel worker", () => {
  it("keeps at most one abort listener however long it waits, and Node never warns", async () => {
    const { edge: e } = await edge({ KVGRAFT_FLYWHEEL: "on", KVGRAFT_FLYWHEEL_IDLE_MS: "2" });
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    const worker = startFlywheelWorker(
      { db: e.db, gpu: e.gpu, config: e.config, clock: systemClock },
      { idleMs: e.config.flywheel.idleMs },
    );
    try {
      // ~150 idle polls of the empty queue; the listener count is sampled along the way.
      const counts: number[] = [];
      for (let i = 0; i < 30; i++) {
        await new Promise((r) => setTimeout(r, 10));
        counts.push(getEventListeners(worker.signal, "abort").length);
      }
      expect(Math.max(...counts)).toBeLessThanOrEqual(1);
    } finally {
      await worker.stop();
      // Node emits its warnings on a later tick.
      await new Promise((r) => setImmediate(r));
      process.off("warning", onWarning);
    }
    expect(worker.processed).toBe(0);
    expect(getEventListeners(worker.signal, "abort")).toHaveLength(0);
    expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
  });
});
