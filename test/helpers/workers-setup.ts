/**
 * Global setup of the workerd tests (runs in Node before workerd starts): a migrated libSQL
 * database served over HTTP (test/helpers/libsql-http.ts) for the Worker's LIBSQL_URL, and two real
 * GPU nodes (`kvgraft serve gpu` child processes on loopback with a generated tiny model, each with
 * its own data folder) that the Worker's pool routes to. Their URLs reach the tests through
 * vitest's provide/inject; the tests register the nodes by sending their signed heartbeats. A
 * loopback control URL lets a test SIGKILL a node (`POST /kill/<id>`), which workerd cannot do,
 * and read back (`GET /calls`) the calls that reached the nodes: each node is reached through a
 * loopback proxy that records every call's method, path and headers (the tests' own calls, marked
 * with TEST_CALL_HEADER, are not recorded) and closes with its node, so that a killed node is
 * unreachable to workerd's own fetch as a real one is.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { migrateDatabase, openDatabase } from "../../edge/db/client.js";
import { kvgraftSourceArgs, readyUrl, supervise } from "../../tools/process/supervise.js";
import { TEST_CALL_HEADER, WORKERS_GPU_SECRET } from "../workers/bindings.js";
import { type LibsqlHttpServer, startLibsqlHttp } from "./libsql-http.js";
import { syntheticModel } from "./models.js";

const root = join(import.meta.dirname, "..", "..");

/** A call that reached a GPU node through its proxy. */
interface RecordedCall {
  method: string;
  path: string;
  headers: Record<string, string>;
}

/** A loopback proxy to `target` that records each call (except the tests' own) into `calls`. */
async function recordingProxy(
  target: string,
  calls: RecordedCall[],
): Promise<{ server: Server; url: string }> {
  const to = new URL(target);
  const server = createServer((req, res) => {
    if (!req.headers[TEST_CALL_HEADER])
      calls.push({
        method: req.method ?? "",
        path: req.url ?? "",
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
      });
    const upstream = httpRequest(
      { host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const work = mkdtempSync(join(tmpdir(), "kvgraft-workers-"));
  const children = new Map<string, ChildProcess>();
  const proxies = new Map<string, Server>();
  const calls: RecordedCall[] = [];
  let libsql: LibsqlHttpServer | undefined;
  const control = createServer((req, res) => {
    if (req.url === "/calls" && req.method === "GET")
      return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(calls));
    const id = /^\/kill\/([\w-]+)$/.exec(req.url ?? "")?.[1];
    const child = id ? children.get(id) : undefined;
    if (req.method !== "POST" || !child || !id) return void res.writeHead(404).end();
    child.once("exit", () => res.writeHead(200).end());
    proxies.get(id)?.close();
    proxies.get(id)?.closeAllConnections();
    child.kill("SIGKILL");
  });
  const teardown = async () => {
    control.close();
    for (const p of proxies.values()) p.close();
    for (const c of children.values()) c.kill("SIGKILL");
    await libsql?.close();
    rmSync(work, { recursive: true, force: true });
  };
  try {
    const fileUrl = `file:${join(work, "edge.db")}`;
    const opened = await openDatabase({ url: fileUrl });
    await migrateDatabase(opened.db);
    opened.close();
    libsql = await startLibsqlHttp(fileUrl);

    const model = syntheticModel("tiny-llama");
    const nodes = await Promise.all(
      ["wa", "wb"].map(async (id) => {
        const served = supervise({
          name: `node ${id}`,
          args: kvgraftSourceArgs(
            ...["serve", "gpu", "--model", model, "--port", "0", "--data-dir", join(work, id)],
            ...["--context", "1024", "--node-id", id, "--json"],
          ),
          cwd: root,
          env: { ...process.env, KVGRAFT_GPU_SECRET: WORKERS_GPU_SECRET, KV_THREADS: "1" },
          ready: readyUrl,
        });
        children.set(id, served.child);
        const proxy = await recordingProxy(await served.ready, calls);
        proxies.set(id, proxy.server);
        return { id, url: proxy.url };
      }),
    );
    await new Promise<void>((resolve) => control.listen(0, "127.0.0.1", resolve));
    project.provide("controlUrl", `http://127.0.0.1:${(control.address() as AddressInfo).port}`);
    project.provide("libsqlUrl", libsql.url);
    project.provide("gpuNodes", nodes);
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}
