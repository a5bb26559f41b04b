/**
 * Nodes and tiers (admin): each GPU node's health, slots, blocks and bytes per tier, queue, shed
 * requests and restore latency by tier, now and as charts (uPlot) over the samples of the last
 * hour. The chart data travels in a JSON block that the page's script (console.js) reads; nothing
 * inline runs.
 */

import type { TierBytes } from "../../../shared/protocol.js";
import { Layout, Term } from "../layout.js";
import type { DescribedNode, NodeSample } from "../node-samples.js";
import { pointOf } from "../node-samples.js";

export interface NodeRow extends DescribedNode {
  url: string;
  status: string;
  source?: string;
  lastHeartbeatAt: string | Date | null;
  health: Record<string, unknown>;
}

const MB = 1e6;
const GB = 1e9;

/** Bytes as text in the largest unit that fits (decimal: 1 MB = 10^6 bytes). */
function formatBytes(bytes: number): string {
  const [unit, size] =
    bytes >= GB ? ["GB", GB] : bytes >= MB ? ["MB", MB] : bytes >= 1e3 ? ["kB", 1e3] : ["B", 1];
  return size === 1 ? `${bytes} B` : `${(bytes / size).toFixed(1)} ${unit}`;
}

/** The tier sizes as text; "n/a" for a node too old to report them. */
function tierBytesText(bytes: TierBytes | null): string {
  if (!bytes) return "n/a (the node does not report tier sizes)";
  return `${formatBytes(bytes.hot)} hot, ${formatBytes(bytes.warm)} warm, ${formatBytes(bytes.cold)} cold`;
}

type Point = NonNullable<NodeSample["nodes"][string]>;

/** The span the charts' time axis always shows, ending at the newest sample. */
const WINDOW_S = 3600;

/**
 * Per node, the series the charts draw: x is seconds since the epoch; `end` (the newest sample,
 * taken by this view) and `windowS` fix the time axis at the last hour, however few samples there are.
 */
function chartData(samples: NodeSample[], ids: string[]) {
  const times = samples.map((s) => Math.round(s.at / 1000));
  const end = times.at(-1) ?? null;
  const series = (id: string, pick: (p: Point) => number | null) =>
    samples.map((s) => {
      const p = s.nodes[id];
      return p ? pick(p) : null;
    });
  /** One unit per chart: GB once any sample of the node reaches a gigabyte, else MB. */
  const bytesChart = (id: string) => {
    const all = samples.flatMap((s) => {
      const b = s.nodes[id]?.bytes;
      return b ? [b.hot, b.warm, b.cold] : [];
    });
    const [unit, size] = Math.max(0, ...all) >= GB ? ["GB", GB] : ["MB", MB];
    const scaled = (tier: keyof TierBytes) => (p: Point) =>
      p.bytes ? Math.round((p.bytes[tier] / size) * 1000) / 1000 : null;
    return {
      title: "Bytes by tier",
      unit,
      series: [
        { label: "hot (in slots)", values: series(id, scaled("hot")) },
        { label: "warm (RAM)", values: series(id, scaled("warm")) },
        { label: "cold (disk)", values: series(id, scaled("cold")) },
      ],
    };
  };
  return {
    times,
    end,
    windowS: WINDOW_S,
    nodes: ids.map((id) => ({
      id,
      charts: [
        bytesChart(id),
        {
          title: "Blocks by tier",
          unit: "blocks",
          series: [
            { label: "hot (in a slot)", values: series(id, (p) => p.hot) },
            { label: "warm (RAM)", values: series(id, (p) => p.warm) },
            { label: "cold (disk)", values: series(id, (p) => p.cold) },
          ],
        },
        {
          title: "Queue and load",
          unit: "requests",
          series: [
            { label: "queue depth", values: series(id, (p) => p.queueDepth) },
            { label: "calls (total)", values: series(id, (p) => p.requests) },
            { label: "shed (total)", values: series(id, (p) => p.shed) },
          ],
        },
        {
          title: "Mean restore latency by tier",
          unit: "ms",
          series: [
            { label: "hot", values: series(id, (p) => p.restoreMs.hot) },
            { label: "warm", values: series(id, (p) => p.restoreMs.warm) },
            { label: "cold", values: series(id, (p) => p.restoreMs.cold) },
          ],
        },
      ],
    })),
  };
}

/** The share of grafts served from the hot tier, as text. */
function hitRate(g: { hot: number; warm: number; cold: number }): string {
  const total = g.hot + g.warm + g.cold;
  if (total === 0) return "no grafts yet";
  const pct = (n: number) => `${Math.round((100 * n) / total)}%`;
  return `hot ${pct(g.hot)}, warm ${pct(g.warm)}, cold ${pct(g.cold)} of ${total}`;
}

/** Mean restore time by tier, as text ("none yet" for a tier no graft came from). */
function restoreLatency(ms: Record<keyof TierBytes, number | null>): string {
  const one = (tier: keyof TierBytes) =>
    `${tier} ${ms[tier] === null ? "none yet" : `${ms[tier].toFixed(1)} ms`}`;
  return `${one("hot")}, ${one("warm")}, ${one("cold")}`;
}

export function NodesPage(props: { nodes: NodeRow[]; samples: NodeSample[] }) {
  const data = chartData(
    props.samples,
    props.nodes.map((n) => n.id),
  );
  return (
    <Layout
      title="Nodes and tiers"
      page="nodes"
      admin={true}
      scripts={["uPlot.iife.min.js", "console.js"]}
      styles={["uPlot.min.css"]}
    >
      <p>
        The charts hold one sample per view of this page (at most one a second), kept in this edge process's
        memory for an hour: {props.samples.length} sample{props.samples.length === 1 ? "" : "s"} so far. Tiers
        are shown in bytes of block state (the manifests' sizes, as each node reports them; a block in two
        slots counts twice in hot, and cold counts every block on the node's disk) and in blocks; calls, shed
        requests and restore latency are this edge's counters since it started.
      </p>
      {props.nodes.length === 0 && <p>No GPU node is known to this edge.</p>}
      {props.nodes.map((n) => {
        const p = pointOf(n);
        const error = typeof n.health.error === "string" ? n.health.error : null;
        return (
          <section class="card" aria-labelledby={`node-${n.id}`}>
            <h2 id={`node-${n.id}`}>{n.id}</h2>
            <dl class="facts">
              <dt>URL</dt>
              <dd>{n.url}</dd>
              <dt>
                <Term tip="Up and live: the node answers and sends heartbeats (or, configured statically, its /health answered).">
                  Health
                </Term>
              </dt>
              <dd class="health">
                {n.live ? "live" : "not live"}, {n.status}
                {typeof n.health.status === "string" ? `, reports ${n.health.status}` : ""}
                {error ? `; last report failed: ${error}` : ""}
              </dd>
              <dt>Slots</dt>
              <dd>{p.slots ?? "unknown"}</dd>
              <dt>
                <Term tip="Blocks in each tier: hot (in a context slot), warm (in RAM), cold (on disk).">
                  Tiers
                </Term>
              </dt>
              <dd class="tier-blocks">
                {p.hot} hot, {p.warm} warm, {p.cold ?? "unknown"} cold blocks
              </dd>
              <dt>
                <Term tip="Bytes of block state in each tier, from the blocks' manifests: hot (the state in the node's slots; a block in two slots counts twice), warm (RAM copies), cold (every block on the node's disk, hot and warm ones too). 1 MB = 10^6 bytes.">
                  Tier sizes
                </Term>
              </dt>
              <dd class="tier-bytes">{tierBytesText(p.bytes)}</dd>
              <dt>
                <Term tip="Grafts this edge sent to the node, by the tier the node restored the block from (as it reported it; the tier the edge expected when it did not).">
                  Hit rate
                </Term>
              </dt>
              <dd>{hitRate(p.restores)}</dd>
              <dt>
                <Term tip="Mean restore time of this edge's grafts on the node, by the tier the block came from (the restoreMs the node reports on each graft).">
                  Restore latency
                </Term>
              </dt>
              <dd class="restore-latency">{restoreLatency(p.restoreMs)}</dd>
              <dt>Queue</dt>
              <dd>
                {p.queueDepth} waiting; {p.shed} shed (queue full), {p.failures} failed of {p.requests} calls
              </dd>
              <dt>Last heartbeat</dt>
              <dd>
                {n.lastHeartbeatAt
                  ? new Date(n.lastHeartbeatAt).toISOString()
                  : n.source === "static"
                    ? "configured node (no heartbeats)"
                    : "never"}
              </dd>
            </dl>
            <div class="charts" data-node={n.id} />
          </section>
        );
      })}
      {/* JSON, not script: `<` is escaped so the text cannot close the element. */}
      <script
        type="application/json"
        id="node-samples"
        dangerouslySetInnerHTML={{ __html: JSON.stringify(data).replaceAll("<", "\\u003c") }}
      />
    </Layout>
  );
}
