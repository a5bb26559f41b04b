/** `kvgraft serve edge` as a user runs it: JSON ready line, a working API, a clean stop. */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const dir = mkdtempSync(join(tmpdir(), "kvgraft-serve-edge-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("prints {url, adminKey} when ready, serves the API, stops on SIGTERM with exit 0", async () => {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("KVGRAFT_") && k !== "LIBSQL_URL"),
  );
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(root, "cli", "main.ts"),
      "serve",
      "edge",
      "--port",
      "0",
      "--db",
      `file:${join(dir, "e.db")}`,
      "--json",
    ],
    { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] },
  );
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const ready = await new Promise<{ url: string; adminKey: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("serve edge was not ready in 60 s")), 60_000);
    createInterface({ input: child.stdout }).on("line", (line) => {
      clearTimeout(timer);
      resolve(JSON.parse(line) as { url: string; adminKey: string });
    });
    void exited.then((code) => reject(new Error(`serve edge exited with ${code}`)));
  });
  expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(ready.adminKey).toMatch(/^kvg_/);
  const health = await fetch(`${ready.url}/health`);
  expect(health.status).toBe(200);
  expect(await health.json()).toMatchObject({ status: "degraded", gpu: { status: "not_configured" } });
  const lib = await fetch(`${ready.url}/v1/library`, {
    headers: { authorization: `Bearer ${ready.adminKey}` },
  });
  expect(lib.status).toBe(200);
  child.kill("SIGTERM");
  expect(await exited).toBe(0);
});
