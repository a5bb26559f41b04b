/**
 * A node killed under load: the graft workload runs at a constant rate while one GPU node gets
 * SIGKILL and, K seconds later, starts again with the same id and data directory. Recorded: a
 * per-second timeline (requests due that second: sent, ok, failed, p99; grafts the edge routed to
 * each node), the failed requests, the latency during the failover window (from the kill until
 * the restarted node takes traffic again) against the latency before the kill, and when the
 * restarted node was ready, live at the edge and taking grafts again.
 */
import {
  type LoadReport,
  type Percentiles,
  percentiles,
  type RequestResult,
  runLoad,
} from "../load-bench.js";
import type { Cluster, NodeView } from "./cluster.js";

export interface FailoverOptions {
  rate: number;
  durationS: number;
  /** When the node is killed, in seconds after the run started. */
  killAtS: number;
  /** Seconds between the kill and the restart. */
  downS: number;
  victim: string;
  timeoutMs: number;
  maxTokens: number;
  log?: (line: string) => void;
}

export interface FailoverSecond {
  /** Second of the run (requests due in [t, t+1) s). */
  t: number;
  sent: number;
  ok: number;
  failed: number;
  /** p99 latency of that second's answered (2xx) requests, ms. */
  p99Ms: number | null;
  /** Grafts the edge routed to each node during that second. */
  graftsByNode: Record<string, number>;
}

export interface FailoverReport {
  rate: number;
  durationS: number;
  victim: string;
  killAtS: number;
  downS: number;
  load: LoadReport;
  failed: number;
  /** Requests that failed, by status or error code. */
  failures: Record<string, number>;
  /** Seconds after the run started. */
  events: {
    killedAtS: number;
    restartedAtS: number;
    readyAtS: number | null;
    liveAtEdgeAtS: number | null;
    takesTrafficAtS: number | null;
  };
  /** From the restart until the restarted node got its first graft, s (null: not during the run). */
  timeToTrafficS: number | null;
  beforeKill: Percentiles | null;
  /** Requests due from the kill until the restarted node takes traffic (or the end of the run). */
  window: { fromS: number; toS: number; requests: number; failed: number; latencyMs: Percentiles | null };
  /** Window minus before-kill latency (p50, p99), ms. */
  extraLatencyMs: { p50: number; p99: number } | null;
  timeline: FailoverSecond[];
}

const graftTotal = (n: NodeView | undefined) =>
  n?.metrics ? Object.values(n.metrics.grafts).reduce((a, b) => a + b, 0) : 0;

/** Runs the workload at `o.rate`, killing and restarting `o.victim` on schedule. */
export async function runFailover(
  cluster: Cluster,
  bodies: string[],
  o: FailoverOptions,
): Promise<FailoverReport> {
  const results: RequestResult[] = [];
  const samples: { t: number; grafts: Record<string, number> }[] = [];
  const t0 = performance.now();
  const now = () => (performance.now() - t0) / 1000;
  const events: FailoverReport["events"] = {
    killedAtS: -1,
    restartedAtS: -1,
    readyAtS: null,
    liveAtEdgeAtS: null,
    takesTrafficAtS: null,
  };
  let running = true;
  let victimGraftsAtRestart: number | null = null;
  let restartedAtWall: number | null = null;
  const poll = (async () => {
    while (running) {
      const nodes = await cluster.nodes().catch(() => null);
      if (nodes) {
        const t = now();
        samples.push({ t, grafts: Object.fromEntries(nodes.map((n) => [n.id, graftTotal(n)])) });
        const victim = nodes.find((n) => n.id === o.victim);
        // Live on a heartbeat sent after the restart (right after the kill the edge still shows the
        // dead node live until its heartbeats are missed).
        const beatAt = victim?.lastHeartbeatAt ? Date.parse(victim.lastHeartbeatAt) : 0;
        if (
          restartedAtWall !== null &&
          events.liveAtEdgeAtS === null &&
          victim?.live &&
          beatAt > restartedAtWall
        )
          events.liveAtEdgeAtS = t;
        if (
          victimGraftsAtRestart !== null &&
          events.takesTrafficAtS === null &&
          graftTotal(victim) > victimGraftsAtRestart
        )
          events.takesTrafficAtS = t;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const chaos = (async () => {
    await new Promise((r) => setTimeout(r, o.killAtS * 1000));
    await cluster.killNode(o.victim);
    events.killedAtS = now();
    o.log?.(`failover: ${o.victim} killed at ${events.killedAtS.toFixed(1)} s`);
    await new Promise((r) => setTimeout(r, o.downS * 1000));
    victimGraftsAtRestart = graftTotal((await cluster.nodes()).find((n) => n.id === o.victim));
    events.restartedAtS = now();
    restartedAtWall = Date.now();
    await cluster.startNode(o.victim);
    events.readyAtS = now();
    o.log?.(
      `failover: ${o.victim} restarted at ${events.restartedAtS.toFixed(1)} s, ready at ${events.readyAtS.toFixed(1)} s`,
    );
  })();
  const load = await runLoad(
    {
      url: cluster.edgeUrl,
      key: cluster.key,
      path: "graft",
      rate: o.rate,
      durationS: o.durationS,
      timeoutMs: o.timeoutMs,
      maxTokens: o.maxTokens,
      onResult: (r) => results.push(r),
    },
    bodies,
  );
  await chaos;
  running = false;
  await poll;

  const killedMs = events.killedAtS * 1000;
  const windowEndMs = (events.takesTrafficAtS ?? o.durationS) * 1000;
  const before = results.filter((r) => r.ok && r.dueMs < killedMs).map((r) => r.latencyMs);
  const inWindow = results.filter((r) => r.dueMs >= killedMs && r.dueMs < windowEndMs);
  const windowLatency = percentiles(inWindow.filter((r) => r.ok).map((r) => r.latencyMs));
  const beforeKill = percentiles(before);
  const failures: Record<string, number> = {};
  for (const r of results) if (!r.ok) failures[r.status] = (failures[r.status] ?? 0) + 1;
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    rate: o.rate,
    durationS: o.durationS,
    victim: o.victim,
    killAtS: o.killAtS,
    downS: o.downS,
    load,
    failed: results.filter((r) => !r.ok).length,
    failures,
    events: {
      killedAtS: round(events.killedAtS),
      restartedAtS: round(events.restartedAtS),
      readyAtS: events.readyAtS === null ? null : round(events.readyAtS),
      liveAtEdgeAtS: events.liveAtEdgeAtS === null ? null : round(events.liveAtEdgeAtS),
      takesTrafficAtS: events.takesTrafficAtS === null ? null : round(events.takesTrafficAtS),
    },
    timeToTrafficS:
      events.takesTrafficAtS === null ? null : round(events.takesTrafficAtS - events.restartedAtS),
    beforeKill,
    window: {
      fromS: round(events.killedAtS),
      toS: round(windowEndMs / 1000),
      requests: inWindow.length,
      failed: inWindow.filter((r) => !r.ok).length,
      latencyMs: windowLatency,
    },
    extraLatencyMs:
      beforeKill && windowLatency
        ? { p50: round(windowLatency.p50 - beforeKill.p50), p99: round(windowLatency.p99 - beforeKill.p99) }
        : null,
    timeline: timeline(results, samples, o.durationS),
  };
}

/** Per-second counts of the requests due each second, and each node's grafts from the edge's counters. */
function timeline(
  results: RequestResult[],
  samples: { t: number; grafts: Record<string, number> }[],
  durationS: number,
): FailoverSecond[] {
  const seconds = Math.ceil(durationS);
  // The last sample at or before a time: the counters then.
  const at = (t: number) => samples.filter((s) => s.t <= t).at(-1)?.grafts ?? samples[0]?.grafts ?? {};
  return Array.from({ length: seconds }, (_, t) => {
    const due = results.filter((r) => r.dueMs >= t * 1000 && r.dueMs < (t + 1) * 1000);
    const okLatency = due.filter((r) => r.ok).map((r) => r.latencyMs);
    const start = at(t);
    const end = at(t + 1);
    return {
      t,
      sent: due.length,
      ok: okLatency.length,
      failed: due.length - okLatency.length,
      p99Ms: percentiles(okLatency)?.p99 ?? null,
      graftsByNode: Object.fromEntries(Object.keys(end).map((id) => [id, (end[id] ?? 0) - (start[id] ?? 0)])),
    };
  });
}
