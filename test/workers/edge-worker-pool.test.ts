/**
 * The Worker entry's GPU pool inside workerd: the same pool, placement, affinity and failover as
 * the Node entry, over the libSQL registry. What is real here: the Worker (edge/runtime/worker.ts
 * as wrangler builds it, in workerd), its libSQL database (a real libSQL file; only the HTTP
 * transport in front of it is the test's, test/helpers/libsql-http.ts), and two GPU nodes
 * (`kvgraft serve gpu` processes on loopback with a generated tiny model and the real sandbox),
 * started by test/helpers/workers-setup.ts. The test sends each node's heartbeat itself (built from
 * the node's own /health and signed with the shared secret), because workerd gives the Worker no
 * address a node could send to.
 */
import { createScheduledController, env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import entry from "../../edge/runtime/worker.js";
import { createGpuClient, readSse } from "../../shared/gpu-client.js";
import { heartbeatFrom, sendHeartbeat } from "../../shared/heartbeat.js";
import { TEST_CALL_HEADER, WORKERS_ACCESS, WORKERS_ADMIN_KEY, WORKERS_GPU_SECRET } from "./bindings.js";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

const worker = (
  exports as unknown as {
    default: {
      fetch(req: Request): Promise<Response>;
    };
  }
).default;
const EDGE = "https://edge.example.com";
const nodes = inject("gpuNodes");
const urlOf = (id: string) => nodes.find((n) => n.id === id)?.url as string;
/** The test's own client of a node; its calls are marked so that the call recorder skips them. */
const clientOf = (id: string) =>
  createGpuClient({
    baseUrl: urlOf(id),
    secret: WORKERS_GPU_SECRET,
    timeoutMs: 60_000,
    headers: { [TEST_CALL_HEADER]: "1" },
  });
const toWorker: typeof fetch = (input, init) => worker.fetch(new Request(input, init));

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await worker.fetch(
    new Request(`${EDGE}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${WORKERS_ADMIN_KEY}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }),
  );
  return { status: res.status, body: (await res.json()) as Json };
}

/** Sends the node's heartbeat (its current /health) to the Worker. */
async function beat(id: string) {
  const health = await clientOf(id).health();
  return sendHeartbeat(
    { edgeUrl: EDGE, secret: WORKERS_GPU_SECRET, fetch: toWorker },
    heartbeatFrom(id, urlOf(id), health),
    30_000, // the first request builds the Worker's app on this shared, busy machine
  );
}

const metricsOf = async (id: string): Promise<Json> =>
  ((await api("GET", "/admin/nodes")).body.nodes as Json[]).find((n) => n.id === id)?.metrics;

const PROBLEM = "A crate holds 17 rows of 23 jars. How many jars are in the crate?";
// Not parametric: a query with new numbers is grafted onto the block, not transferred.
const ENTRY = { problem: PROBLEM, solution: "17 × 23 = 391 jars.", program: "print(391)\n", answer: "391" };
const QUERY = { problem: "A crate holds 12 rows of 30 jars. How many jars are in the crate?", maxTokens: 4 };

describe("the Worker's GPU pool (two real GPU nodes)", () => {
  let blockId = "";
  let first = "";
  let second = "";

  it("accepts signed heartbeats into the libSQL registry and refuses unsigned ones", async () => {
    for (const { id } of nodes) {
      const answer = await beat(id);
      expect(answer).toMatchObject({ node: { id, status: "up" }, intervalMs: 60_000 });
    }
    const unsigned = await worker.fetch(
      new Request(`${EDGE}/cluster/heartbeat`, { method: "POST", body: "{}" }),
    );
    expect(unsigned.status).toBe(401);
    const listed = (await api("GET", "/admin/nodes")).body.nodes as Json[];
    expect(listed.map((n) => [n.id, n.status, n.live]).sort()).toEqual([
      ["wa", "up", true],
      ["wb", "up", true],
    ]);
  });

  // Deposits check their program in the nodes' sandbox (WebAssembly by default: it runs everywhere).
  describe("with a deposited block", () => {
    it("a deposit lands on both nodes (R = 2), and a graft goes to the node where the block is hot", async () => {
      const deposited = await api("POST", "/admin/solutions", ENTRY);
      expect(deposited.status, JSON.stringify(deposited.body)).toBe(201);
      blockId = deposited.body.block.sha256;
      const placed = (await api("GET", `/admin/blocks/${blockId}/placement`)).body.placement as Json;
      expect(placed.missing).toEqual([]);
      expect(placed.holders.map((h: Json) => h.nodeId).sort()).toEqual(["wa", "wb"]);
      [first, second] = placed.desired as [string, string];

      // Hot on the node rendezvous ranks second, and only there: two generations at once take both
      // slots of the first (evicting the block), and a prefetch restores it into a slot of the second.
      await Promise.all(
        [1, 2].map(() => clientOf(first).generate({ prompt: "Count: one two", maxTokens: 4 })),
      );
      expect(await clientOf(second).prefetch(blockId, "hot")).toBe("hot");
      await Promise.all([beat(first), beat(second)]);
      const route = (await api("GET", `/admin/blocks/${blockId}/placement`)).body.placement.route as Json[];
      expect(route[0]).toEqual({ id: second, tier: "hot" });

      const before = { first: await metricsOf(first), second: await metricsOf(second) };
      const solved = await api("POST", "/v1/solve", QUERY);
      expect(solved.status, JSON.stringify(solved.body)).toBe(200);
      expect(solved.body).toMatchObject({ source: "graft", route: { blockId } });
      const after = { first: await metricsOf(first), second: await metricsOf(second) };
      expect(after.second.grafts.hot - before.second.grafts.hot).toBe(1);
      expect(after.second.requests - before.second.requests).toBe(1);
      expect(after.first.requests).toBe(before.first.requests);
    });

    it("streams a graft as server-sent events: the node's tokens, then the result (shared/sse.ts in workerd)", async () => {
      const res = await worker.fetch(
        new Request(`${EDGE}/v1/solve`, {
          method: "POST",
          headers: { authorization: `Bearer ${WORKERS_ADMIN_KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ ...QUERY, stream: true }),
        }),
      );
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      const events: { event: string; data: Json }[] = [];
      for await (const e of readSse(res.body as ReadableStream<Uint8Array>))
        events.push(e as { event: string; data: Json });
      const result = events.at(-1);
      expect(result).toMatchObject({ event: "result", data: { source: "graft", route: { blockId } } });
      const tokens = events.filter((e) => e.event === "token");
      expect(tokens.length).toBeGreaterThan(0);
      expect(tokens.map((e) => e.data.text).join("")).toBe(result?.data.text);
    });

    it("fails over to the other replica when the node holding the block hot is gone (one retry)", async () => {
      const killed = await fetch(`${inject("controlUrl")}/kill/${second}`, {
        method: "POST",
        headers: { [TEST_CALL_HEADER]: "1" },
      });
      expect(killed.status).toBe(200);
      // The registry still has it up with a fresh heartbeat: the first attempt goes there and fails.
      const before = { first: await metricsOf(first), second: await metricsOf(second) };
      const solved = await api("POST", "/v1/solve", QUERY);
      expect(solved.status, JSON.stringify(solved.body)).toBe(200);
      expect(solved.body).toMatchObject({ source: "graft", route: { blockId } });
      const after = { first: await metricsOf(first), second: await metricsOf(second) };
      expect(after.second.requests - before.second.requests).toBe(1);
      expect(after.second.failovers - before.second.failovers).toBe(1);
      expect(after.first.requests - before.first.requests).toBe(1);
      expect(after.first.grafts.warm + after.first.grafts.cold).toBe(
        before.first.grafts.warm + before.first.grafts.cold + 1,
      );
      // Unreachable: marked down in the registry, so requests on other isolates skip it too.
      const deadline = Date.now() + 10_000;
      let listed: { status: number; body: Json };
      for (;;) {
        listed = await api("GET", "/admin/nodes");
        const dead = (listed.body.nodes as Json[] | undefined)?.find((n) => n.id === second);
        if (dead?.status === "down" || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(listed.status, JSON.stringify(listed.body)).toBe(200);
      expect(listed.body.nodes.find((n: Json) => n.id === second)).toMatchObject({
        status: "down",
        live: false,
      });
    });

    it("the Cron trigger runs the missed-heartbeat sweep and a full rebalance", async () => {
      const before = (await api("GET", "/admin/rebalance")).body.rebalance as Json;
      // The entry module the Worker runs (one module instance in this isolate): its handler, called
      // as a Cron trigger calls it.
      await entry.scheduled(
        createScheduledController({ cron: "* * * * *" }),
        env as unknown as Record<string, unknown>,
      );
      const after = (await api("GET", "/admin/rebalance")).body.rebalance as Json;
      expect(after.runs).toBeGreaterThan(before.runs);
      expect(after.last).toMatchObject({ reason: "periodic", liveNodes: 1 });
      expect(after.last.finishedAt).not.toBeNull();
    });

    it("every call the Worker made to a GPU node carried the Cloudflare Access service token", async () => {
      // Recorded by the nodes' loopback proxies (test/helpers/workers-setup.ts).
      const calls = (await (await fetch(`${inject("controlUrl")}/calls`)).json()) as {
        method: string;
        path: string;
        headers: Record<string, string>;
      }[];
      const paths = calls.map((c) => `${c.method} ${c.path}`);
      expect(paths).toContain("POST /v1/graft");
      for (const call of calls)
        expect(call.headers, `${call.method} ${call.path}`).toMatchObject({
          "cf-access-client-id": WORKERS_ACCESS.clientId,
          "cf-access-client-secret": WORKERS_ACCESS.clientSecret,
        });
    });
  });
});
