/**
 * The last hour of node samples behind the nodes page's charts. The edge keeps no history of its
 * own, so this in-memory ring takes one sample of every node each time the nodes page is viewed
 * (at most one per `minGapMs`; a view sooner replaces the newest sample): the charts show the
 * views of the last hour, and start empty when the process (or Worker isolate) starts.
 */
import type { TierBytes } from "../../shared/protocol.js";
import type { RouteTier } from "../cluster/placement.js";

/** One node at one moment: counts are from its last health report, counters from this edge. */
export interface NodePoint {
  live: boolean;
  slots: number | null;
  queueDepth: number;
  hot: number;
  warm: number;
  cold: number | null;
  /** Bytes of block state per tier; null from a node too old to report them. */
  bytes: TierBytes | null;
  requests: number;
  failures: number;
  shed: number;
  /** Grafts by the tier the node restored the block from (as the node reported it). */
  restores: Record<RouteTier, number>;
  /** Mean restore time of the grafts from each tier so far; null before the first. */
  restoreMs: Record<RouteTier, number | null>;
}

export interface NodeSample {
  at: number;
  nodes: Record<string, NodePoint>;
}

/** A node as `describeNodes` reports it (the fields the samples read). */
export interface DescribedNode {
  id: string;
  live: boolean;
  capacity?: Record<string, unknown>;
  tiers?: {
    hot: readonly string[];
    warm: readonly string[];
    coldCount: number | null;
    bytes?: TierBytes | null;
  };
  queueDepth?: number;
  metrics?: unknown;
}

interface MetricsShape {
  requests?: number;
  failures?: number;
  shed?: number;
  restores?: Record<RouteTier, { count: number; msSum: number }>;
}

const TIERS: RouteTier[] = ["hot", "warm", "cold"];

/** The point of one described node. */
export function pointOf(node: DescribedNode): NodePoint {
  const m = (node.metrics ?? {}) as MetricsShape;
  const slots = node.capacity?.slots;
  const restoreMs = Object.fromEntries(
    TIERS.map((t) => {
      const r = m.restores?.[t];
      return [t, r && r.count > 0 ? r.msSum / r.count : null];
    }),
  ) as Record<RouteTier, number | null>;
  return {
    live: node.live,
    slots: typeof slots === "number" ? slots : null,
    queueDepth: node.queueDepth ?? 0,
    hot: node.tiers?.hot.length ?? 0,
    warm: node.tiers?.warm.length ?? 0,
    cold: node.tiers?.coldCount ?? null,
    bytes: node.tiers?.bytes ?? null,
    requests: m.requests ?? 0,
    failures: m.failures ?? 0,
    shed: m.shed ?? 0,
    restores: {
      hot: m.restores?.hot.count ?? 0,
      warm: m.restores?.warm.count ?? 0,
      cold: m.restores?.cold.count ?? 0,
    },
    restoreMs,
  };
}

export interface NodeSampleRing {
  /** Adds a sample of these nodes taken at `at` (ms since the epoch); returns the last hour's samples. */
  record(at: number, nodes: DescribedNode[]): NodeSample[];
  /** The samples of the last hour, oldest first. */
  recent(at: number): NodeSample[];
}

/** A ring of at most `capacity` samples spanning at most `windowMs`. */
export function createNodeSampleRing(
  options: { capacity: number; windowMs: number; minGapMs: number } = {
    capacity: 720,
    windowMs: 3_600_000,
    minGapMs: 1_000,
  },
): NodeSampleRing {
  const samples: NodeSample[] = [];
  const recent = (at: number) => {
    while (samples.length > 0 && (samples[0] as NodeSample).at < at - options.windowMs) samples.shift();
    return [...samples];
  };
  return {
    record(at, nodes) {
      const sample = { at, nodes: Object.fromEntries(nodes.map((n) => [n.id, pointOf(n)])) };
      const last = samples.at(-1);
      if (last && at - last.at < options.minGapMs) samples[samples.length - 1] = sample;
      else samples.push(sample);
      if (samples.length > options.capacity) samples.splice(0, samples.length - options.capacity);
      return recent(at);
    },
    recent,
  };
}
