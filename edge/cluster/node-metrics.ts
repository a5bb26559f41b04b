/** Per-node counters this edge process keeps about the GPU nodes it calls (for /admin/nodes/metrics). */
import type { RouteTier } from "./placement.js";

/** Per-node counters kept by this edge process. */
export interface NodeMetrics {
  /** Calls (attempts) this edge process sent to the node. */
  requests: number;
  /** Calls this edge process has open on the node now (a gauge; graft routing balances on it). */
  inFlight: number;
  /**
   * Calls that ended in an error of any kind (the node's error answer, a refusal, a timeout, an
   * unreachable node), whether or not they were retried elsewhere; not the calls whose caller left.
   */
  failures: number;
  /** Of the failures, the calls that were then retried on another node. */
  failovers: number;
  grafts: Record<RouteTier, number>;
  copiesIn: number;
  copiesOut: number;
  bytesIn: number;
  drops: number;
  latencyMsSum: number;
  /** Calls the node refused because its queue was full (429 `queue_full`): load it shed. */
  shed: number;
  /** Grafts by the tier the node restored from, with the restore time the node reported. */
  restores: Record<RouteTier, { count: number; msSum: number }>;
}

/** The counters of every node seen so far; a node's counters start at zero on first use. */
export interface MetricsBook {
  of(nodeId: string): NodeMetrics;
  all(): Record<string, NodeMetrics>;
}

const newMetrics = (): NodeMetrics => ({
  requests: 0,
  inFlight: 0,
  failures: 0,
  failovers: 0,
  grafts: { hot: 0, warm: 0, cold: 0 },
  copiesIn: 0,
  copiesOut: 0,
  bytesIn: 0,
  drops: 0,
  latencyMsSum: 0,
  shed: 0,
  restores: { hot: { count: 0, msSum: 0 }, warm: { count: 0, msSum: 0 }, cold: { count: 0, msSum: 0 } },
});

/** An empty book of per-node counters. */
export function createMetricsBook(): MetricsBook {
  const metrics = new Map<string, NodeMetrics>();
  return {
    of(nodeId) {
      let m = metrics.get(nodeId);
      if (!m) {
        m = newMetrics();
        metrics.set(nodeId, m);
      }
      return m;
    },
    all: () => Object.fromEntries(metrics),
  };
}
