/**
 * The per-node counters the console's nodes page and `/admin/nodes/metrics` show, as the failover
 * runner keeps them: a call the node refuses with a full queue (429 `queue_full`) counts as shed on
 * that node and is retried on the next one; other failures are not shed.
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
    expect(metrics.of("busy")).toMatchObject({ requests: 1, shed: 1, failovers: 1 });
    expect(metrics.of("free")).toMatchObject({ requests: 1, shed: 0 });
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
});
