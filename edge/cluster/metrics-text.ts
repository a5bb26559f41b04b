/**
 * The pool's per-node counters in the Prometheus text exposition format (`GET
 * /admin/nodes/metrics`). Written out here rather than through a metrics library: the edge also
 * runs in Workers, where the Node metrics libraries do not.
 */
import type { NodeMetrics } from "./node-metrics.js";

type Sample = [labels: Record<string, string>, value: number];

/** One per-node counter: its name, help text and how to read it from a node's counters. */
const COUNTERS: [name: string, help: string, read: (m: NodeMetrics) => number][] = [
  ["requests_total", "Calls sent to the node.", (m) => m.requests],
  ["failures_total", "Calls to the node that failed.", (m) => m.failures],
  ["failovers_total", "Calls retried elsewhere after failing here.", (m) => m.failovers],
  ["copies_in_total", "Block copies received.", (m) => m.copiesIn],
  ["copies_out_total", "Block copies sent.", (m) => m.copiesOut],
  ["copy_bytes_in_total", "Bytes of block copies received.", (m) => m.bytesIn],
  ["drops_total", "Surplus copies removed.", (m) => m.drops],
  ["latency_seconds_total", "Time spent in calls to the node.", (m) => m.latencyMsSum / 1000],
  ["shed_total", "Calls the node refused with a full queue (429 queue_full).", (m) => m.shed],
];

/** Label values with `"`, `\` and newlines replaced, so no value can break the line. */
const label = (v: string) => v.replace(/["\\\n]/g, "_");

/** Renders the counters of `nodes` (and whether each is live) as Prometheus text. */
export function renderNodeMetrics(
  nodes: readonly { id: string; live: boolean }[],
  metricsOf: (nodeId: string) => NodeMetrics,
): string {
  const lines: string[] = [];
  const metric = (name: string, help: string, type: "gauge" | "counter", samples: Sample[]) => {
    const full = `kvgraft_edge_node_${name}`;
    lines.push(`# HELP ${full} ${help}`, `# TYPE ${full} ${type}`);
    for (const [labels, value] of samples) {
      const l = Object.entries(labels)
        .map(([k, v]) => `${k}="${label(v)}"`)
        .join(",");
      lines.push(`${full}{${l}} ${value}`);
    }
  };
  metric(
    "up",
    "1 when the node is live.",
    "gauge",
    nodes.map((n) => [{ node: n.id }, n.live ? 1 : 0]),
  );
  metric(
    "in_flight",
    "Calls this edge has open on the node now.",
    "gauge",
    nodes.map((n): Sample => [{ node: n.id }, metricsOf(n.id).inFlight]),
  );
  for (const [name, help, read] of COUNTERS)
    metric(
      name,
      help,
      "counter",
      nodes.map((n): Sample => [{ node: n.id }, read(metricsOf(n.id))]),
    );
  metric(
    "grafts_total",
    "Grafts routed to the node, by the tier the route chose.",
    "counter",
    nodes.flatMap((n) =>
      (["hot", "warm", "cold"] as const).map(
        (tier): Sample => [{ node: n.id, tier }, metricsOf(n.id).grafts[tier]],
      ),
    ),
  );
  const tiers = ["hot", "warm", "cold"] as const;
  metric(
    "restores_total",
    "Grafts on the node, by the tier the node restored the block from.",
    "counter",
    nodes.flatMap((n) =>
      tiers.map((tier): Sample => [{ node: n.id, tier }, metricsOf(n.id).restores[tier].count]),
    ),
  );
  metric(
    "restore_seconds_total",
    "Restore time the node reported for those grafts, by tier.",
    "counter",
    nodes.flatMap((n) =>
      tiers.map((tier): Sample => [{ node: n.id, tier }, metricsOf(n.id).restores[tier].msSum / 1000]),
    ),
  );
  return `${lines.join("\n")}\n`;
}
