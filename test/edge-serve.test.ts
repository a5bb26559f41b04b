/** `kvgraft serve edge` as a user runs it: JSON ready line, a working API, a clean stop. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { kvgraftSourceArgs, supervise } from "../tools/process/supervise.js";

const root = join(import.meta.dirname, "..");
const dir = mkdtempSync(join(tmpdir(), "kvgraft-serve-edge-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("prints {url, adminKey} when ready, serves the API, stops on SIGTERM with exit 0", async () => {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("KVGRAFT_") && k !== "LIBSQL_URL"),
  );
  const edge = supervise({
    name: "serve edge",
    args: kvgraftSourceArgs("serve", "edge", "--port", "0", "--db", `file:${join(dir, "e.db")}`, "--json"),
    cwd: root,
    env,
    ready: (line) => line as { url: string; adminKey: string },
    readyTimeoutMs: 60_000,
  });
  const ready = await edge.ready;
  expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(ready.adminKey).toMatch(/^kvg_/);
  const health = await fetch(`${ready.url}/health`);
  expect(health.status).toBe(200);
  expect(await health.json()).toMatchObject({ status: "degraded", gpu: { status: "not_configured" } });
  const lib = await fetch(`${ready.url}/v1/library`, {
    headers: { authorization: `Bearer ${ready.adminKey}` },
  });
  expect(lib.status).toBe(200);
  expect(await edge.stop()).toEqual({ code: 0, signal: null });
});
