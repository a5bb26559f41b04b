/**
 * The per-node counters the console's nodes page and `/admin/nodes/metrics` show, as the failover
 * runner keeps them: a call the node refuses with a full queue (429 `queue_full`) counts as shed on
 * that node and is retried on the next one; other failures are not shed; every failed call counts
 * as a failure, and as a failover only when another node was then tried.
 */
import { describe, expect, it } from "vitest";
import { createMetricsBook } from "../edge/cluster/node-metrics.js";
import { createFailover } from "../edge/cluster/pool-calls.js";
import type { GpuNodeClient } from "../shared/gpu-client.js";
import { GpuError } from "../shared/gpu-transport.js";

function failover() {
  const metrics = createMetricsBook();
  const run = createFailover({
    timeoutMs: 5_000,
    timing: { heartbeatMs: 1_000, downAfter: 3 },
    // The attempts below never use the client: they fail or answer by node id.
    client: () => ({}) as GpuNodeClient,
    metrics,
    nodeGone: async () => undefined,
    markSuspect: () => undefined,
  });
  return { metrics, run };
}

describe("node counters", () => {
  it("count a full queue as shed and retry on the next node", async () => {
    const { metrics, run } = failover();
    const out = await run(["busy", "free"], async (_c, _o, nodeId) => {
      if (nodeId === "busy") throw new GpuError(429, "queue_full", "the queue is full");
      return "done";
    });
    expect(out).toMatchObject({ result: "done", nodeId: "free" });
    expect(metrics.of("busy")).toMatchObject({ requests: 1, shed: 1, failures: 1, failovers: 1 });
    expect(metrics.of("free")).toMatchObject({ requests: 1, shed: 0, failures: 0, failovers: 0 });
  });

  it("do not count other failures as shed", async () => {
    const { metrics, run } = failover();
    await expect(
      run(["broken"], async () => {
        throw new GpuError(500, "internal_error", "boom");
      }),
    ).rejects.toThrow();
    expect(metrics.of("broken")).toMatchObject({ requests: 1, shed: 0 });
  });

  it("count every failed call as a failure; a failover only when another node was tried", async () => {
    const { metrics, run } = failover();
    // The only node answers 503 `draining` (as a node shutting down does): 20 failed
    // calls, none failed over, since there was nowhere else to go.
    for (let i = 0; i < 20; i++)
      await expect(
        run(["only"], async () => {
          throw new GpuError(503, "draining", "the node is draining");
        }),
      ).rejects.toThrow();
    expect(metrics.of("only")).toMatchObject({ requests: 20, failures: 20, failovers: 0, inFlight: 0 });

    // Two nodes that both fail, each in its own way: one failure each, one failover (the first).
    await expect(
      run(["slow", "down"], async (_c, _o, nodeId) => {
        if (nodeId === "slow") throw new DOMException("timed out", "TimeoutError");
        throw new TypeError("fetch failed");
      }),
    ).rejects.toThrow();
    expect(metrics.of("slow")).toMatchObject({ requests: 1, failures: 1, failovers: 1 });
    expect(metrics.of("down")).toMatchObject({ requests: 1, failures: 1, failovers: 0 });

    // A refusal about the request (a verdict) is a failed call too, and is not retried.
    await expect(
      run(["strict", "other"], async () => {
        throw new GpuError(400, "invalid_request", "bad");
      }),
    ).rejects.toThrow();
    expect(metrics.of("strict")).toMatchObject({ requests: 1, failures: 1, failovers: 0 });
    expect(metrics.of("other")).toMatchObject({ requests: 0 });
  });

  it("do not count a call whose caller left as the node's failure", async () => {
    const { metrics, run } = failover();
    const caller = new AbortController();
    caller.abort();
    await expect(
      run(
        ["node"],
        async () => {
          throw new DOMException("aborted", "AbortError");
        },
        undefined,
        caller.signal,
      ),
    ).rejects.toThrow();
    expect(metrics.of("node")).toMatchObject({ requests: 1, failures: 0, failovers: 0 });
  });
});
