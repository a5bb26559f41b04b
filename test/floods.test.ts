/**
 * Unauthenticated floods and replays against real `kvgraft serve` processes (issue 23): unsigned
 * 8 MiB bodies to the GPU node's chunk route and to the edge's heartbeat are refused from their
 * headers, so the server's resident memory stays within a stated bound; a signed request
 * replayed after the GPU node restarts on the same data directory is refused.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { gpuPaths } from "../shared/protocol.js";
import { signRequest } from "../shared/signing.js";
import { kvgraftSourceArgs, readyUrl, supervise } from "../tools/process/supervise.js";
import { syntheticModel } from "./helpers/models.js";

const root = join(import.meta.dirname, "..");
const SECRET = "test-secret-floods-0123456789";
const BODY_BYTES = 8 * 2 ** 20;
const REQUESTS = 60;
const CONCURRENCY = 30;
/** What 60 unsigned 8 MiB bodies may add to a server's RSS (480 MiB if they were all read). */
const RSS_BOUND_BYTES = 120 * 2 ** 20;

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
});

interface Served {
  child: ChildProcess;
  url: string;
  exited: Promise<unknown>;
}

/** `kvgraft serve <args> --json`; resolves with its URL once it printed its JSON line. */
async function serve(args: string[], env: Record<string, string>): Promise<Served> {
  const served = supervise({
    name: `serve ${args[0]}`,
    args: kvgraftSourceArgs("serve", ...args, "--json"),
    cwd: root,
    env: { ...process.env, KVGRAFT_GPU_SECRET: SECRET, KV_THREADS: "1", ...env },
    ready: readyUrl,
  });
  children.push(served.child);
  return { child: served.child, url: await served.ready, exited: served.exited };
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1]) * 1024;
}

/** One request on its own connection with a chunked body; resolves with the status (0: reset). */
function send(url: string, method: string, headers: Record<string, string>, body: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      url,
      { method, agent: false, headers: { ...headers, "transfer-encoding": "chunked" } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", () => resolve(0));
    for (let off = 0; off < body.length; off += 2 ** 20) req.write(body.subarray(off, off + 2 ** 20));
    req.end();
  });
}

/**
 * Sends `REQUESTS` unsigned bodies, `CONCURRENCY` at a time, then one small unsigned request;
 * returns the flood's statuses, the server's peak RSS growth and the small request's status.
 */
async function flood(server: Served, url: string, method: string) {
  const pid = server.child.pid as number;
  const before = rssBytes(pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssBytes(pid));
  }, 20);
  const body = Buffer.alloc(BODY_BYTES, 0x61);
  const statuses: number[] = [];
  try {
    for (let i = 0; i < REQUESTS; i += CONCURRENCY)
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(CONCURRENCY, REQUESTS - i) }, () =>
            send(url, method, { "content-type": "application/octet-stream" }, body),
          ),
        )),
      );
  } finally {
    clearInterval(sampler);
  }
  peak = Math.max(peak, rssBytes(pid));
  const after = await send(url, method, {}, Buffer.from("{}"));
  return { statuses, growth: peak - before, after };
}

describe("floods and replays against real servers", () => {
  it(`keeps the GPU node's RSS within ${RSS_BOUND_BYTES / 2 ** 20} MiB under ${REQUESTS} unsigned 8 MiB bodies, and refuses a replay after a restart`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "kvgraft-floods-gpu-"));
    const args = [
      "gpu",
      "--model",
      syntheticModel("tiny-llama"),
      "--port",
      "0",
      "--data-dir",
      dataDir,
      "--context",
      "512",
      "--no-sandbox",
    ];
    const node = await serve(args, {});
    const chunkPath = gpuPaths.importChunk("0".repeat(32), 0);
    const { statuses, growth, after } = await flood(node, `${node.url}${chunkPath}`, "PUT");
    expect(statuses.filter((s) => s !== 401 && s !== 0)).toEqual([]);
    // Refused from its headers: answered 401, or reset while its body was still being sent.
    expect(statuses.filter((s) => s === 401).length + statuses.filter((s) => s === 0).length).toBe(REQUESTS);
    expect(after).toBe(401);
    expect(growth).toBeLessThan(RSS_BOUND_BYTES);
    // A signed request, then the same bytes again after a restart on the same data directory.
    const path = gpuPaths.blocks;
    const headers = await signRequest({ secret: SECRET, method: "GET", path });
    expect((await fetch(`${node.url}${path}`, { headers })).status).toBe(200);
    node.child.kill("SIGTERM");
    await node.exited;
    const again = await serve(args, {});
    const replay = await fetch(`${again.url}${path}`, { headers });
    expect(replay.status).toBe(401);
    expect(((await replay.json()) as { error: { code: string } }).error.code).toBe("signature_replayed");
    const fresh = await signRequest({ secret: SECRET, method: "GET", path });
    expect((await fetch(`${again.url}${path}`, { headers: fresh })).status).toBe(200);
    again.child.kill("SIGTERM");
    await again.exited;
  }, 180_000);

  it(`keeps the edge's RSS within ${RSS_BOUND_BYTES / 2 ** 20} MiB under ${REQUESTS} unsigned 8 MiB heartbeats, and refuses a replay after a restart`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "kvgraft-floods-edge-"));
    const edgeArgs = ["edge", "--port", "0", "--db", `file:${join(dir, "edge.db")}`];
    const edge = await serve(edgeArgs, {});
    const { statuses, growth, after } = await flood(edge, `${edge.url}/cluster/heartbeat`, "POST");
    expect(statuses.filter((s) => s !== 401 && s !== 0)).toEqual([]);
    // Refused from its headers: answered 401, or reset while its body was still being sent.
    expect(statuses.filter((s) => s === 401).length + statuses.filter((s) => s === 0).length).toBe(REQUESTS);
    expect(after).toBe(401);
    expect(growth).toBeLessThan(RSS_BOUND_BYTES);
    // A signed heartbeat (its body is no heartbeat: 400 once the signature passed), replayed to
    // the same edge and, after a restart on the same database, to the next one.
    const path = "/cluster/heartbeat";
    const body = "{}";
    const headers = await signRequest({ secret: SECRET, method: "POST", path, body });
    const post = (url: string) => fetch(`${url}${path}`, { method: "POST", headers, body });
    const code = async (url: string) =>
      ((await (await post(url)).json()) as { error: { code: string } }).error.code;
    expect((await post(edge.url)).status).toBe(400);
    expect(await code(edge.url)).toBe("signature_replayed");
    edge.child.kill("SIGTERM");
    await edge.exited;
    const again = await serve(edgeArgs, {});
    expect(await code(again.url)).toBe("signature_replayed");
    again.child.kill("SIGTERM");
    await again.exited;
  }, 120_000);
});
