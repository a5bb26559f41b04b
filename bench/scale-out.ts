/**
 * `kvgraft bench scale-out`: graft throughput of one GPU node against several behind one edge, and
 * a node killed under load. It starts `kvgraft serve edge` and N `kvgraft serve gpu` nodes (each
 * with its own data directory and port, and CUDA_VISIBLE_DEVICES of its own with --devices), which
 * register through signed heartbeats; deposits a library of B blocks (B above one node's hot tier,
 * which the nodes report), each on R = 2 nodes; then runs the graft workload (bench edge's
 * constant-rate loop, requests spread uniformly over the library) at increasing rates against one
 * node (the others stopped) and then all N, every node restarted before each (its warm tier empty
 * until warm start refills it from disk; by default a phase waits for that, and the tiers each node
 * reports then are recorded). Per rate: offered, ok, failed, throughput, p50/p95/p99,
 * and affinity: the share of grafts the nodes served from a block that was hot or warm (their own
 * tier counters). Then the failover run (bench/scale-out/failover.ts) and a check that every
 * deposited block still grafts with its first output hash. One JSON document.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, platform, release, tmpdir } from "node:os";
import { join } from "node:path";
import type { Health } from "../shared/protocol.js";
import { type LoadReport, percentiles, runLoad, tinyModel } from "./load-bench.js";
import { type Cluster, ScaleOutSetupError, startCluster, type TierHits } from "./scale-out/cluster.js";

export { ScaleOutSetupError };

import { type FailoverReport, runFailover } from "./scale-out/failover.js";
import { checkLibrary, depositLibrary, type LibraryCheck, workloadBodies } from "./scale-out/library.js";

export interface ScaleOutOptions {
  /** Default: a tiny generated model in the data directory. */
  modelPath?: string;
  /** Default: a fresh temporary directory, removed afterwards. */
  dataDir?: string;
  nodes: number;
  /** CUDA_VISIBLE_DEVICES per node. */
  devices?: string[];
  slots?: string;
  contextSize?: number;
  /** Default: three times one node's hot slots. */
  blocks?: number;
  blockTokens: number;
  maxTokens: number;
  /** Rates for one node and for all nodes; `auto`: from a closed-loop probe of one node. */
  rates: { one: number[]; all: number[] } | "auto";
  durationS: number;
  warmupS: number;
  pauseS: number;
  timeoutMs: number;
  /** A run is sustained when its p99 stays under this (default: 5x the p50 of the first one-node run). */
  p99BoundMs?: number;
  heartbeatMs: number;
  /** Begin each phase only once warm start has finished on every node (default in the CLI). */
  waitWarmStart: boolean;
  /** Null: no failover run. `rate` auto: 80% of the measured capacity of all nodes. */
  failover: { rate: number | "auto"; durationS: number; killAtS: number; downS: number } | null;
  env: Record<string, string | undefined>;
  kvgraftArgs?: (...args: string[]) => string[];
  log?: (line: string) => void;
}

export interface ScaleOutRun extends LoadReport {
  nodes: number;
  failed: number;
  /** Grafts served per tier by the running nodes (their counters), and the hot-or-warm share. */
  affinity: TierHits & { hotOrWarmShare: number | null };
  /** Grafts the edge sent to each node. */
  graftsByNode: Record<string, number>;
  /** Error rate <= 1%, throughput >= 90% of the rate and p99 under the bound. */
  sustained: boolean;
}

/** The nodes' tiers when a phase begins: after their restart and (when waited for) their warm start. */
export interface PhaseStart {
  waitedForWarmStart: boolean;
  nodes: Record<
    string,
    {
      hot: number;
      warm: number;
      stored: number;
      warmBytes: number | null;
      warmBudgetBytes: number | null;
      warmStart: Health["warmStart"] | null;
    }
  >;
}

export interface ScaleOutResult {
  bench: "scale-out";
  machine: { cpus: number; node: string; platform: string };
  model: string;
  config: {
    nodes: number;
    devices: string[] | null;
    hotSlotsPerNode: number;
    replicas: number;
    blocks: number;
    blockTokens: { target: number; min: number; median: number; max: number };
    maxTokens: number;
    durationS: number;
    heartbeatMs: number;
    waitWarmStart: boolean;
  };
  /** The closed-loop probe of one node (auto rates): its rate, and its failures by error code. */
  probe: { concurrency: number; durationS: number; okPerS: number; failures: Record<string, number> } | null;
  p99BoundMs: number;
  /** Per topology: its runs, its capacity, the tiers at its start and the hot-or-warm share of all its runs. */
  topologies: {
    nodes: number;
    runs: ScaleOutRun[];
    capacityRps: number;
    phaseStart: PhaseStart;
    hotOrWarmShare: number | null;
  }[];
  /** Capacity of all nodes over the capacity of one, under the same p99 bound. */
  speedup: number | null;
  failover: FailoverReport | null;
  /** Every block grafted through the edge after the deposits, and at the end (after the failover run). */
  library: { afterDeposit: LibraryCheck; atEnd: LibraryCheck };
  edgeExitCode: number | null;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const pause = (s: number) => new Promise((r) => setTimeout(r, s * 1000));
const sum = (h: Record<string, number>) => Object.values(h).reduce((a, b) => a + b, 0);

/** Runs the whole benchmark; see the file comment. */
export async function benchScaleOut(o: ScaleOutOptions): Promise<ScaleOutResult> {
  if (o.nodes < 2) throw new Error("scale-out needs at least 2 nodes");
  const log = o.log ?? (() => undefined);
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), "kvgraft-scale-out-"));
  const modelPath = o.modelPath ?? (await tinyModel(dataDir));
  const ids = Array.from({ length: o.nodes }, (_, i) => `gpu-${i}`);
  log(`starting serve edge + ${o.nodes} x serve gpu (${modelPath}) in ${dataDir}`);
  const cluster = await startCluster({
    dataDir,
    modelPath,
    nodeIds: ids,
    ...(o.devices ? { devices: o.devices } : {}),
    ...(o.slots ? { slots: o.slots } : {}),
    ...(o.contextSize ? { contextSize: o.contextSize } : {}),
    heartbeatMs: o.heartbeatMs,
    env: o.env,
    ...(o.kvgraftArgs ? { kvgraftArgs: o.kvgraftArgs } : {}),
    log,
  });
  let edgeExitCode: number | null = null;
  try {
    const result = await measure(cluster, ids, modelPath, o, log);
    edgeExitCode = await cluster.close();
    return { ...result, edgeExitCode };
  } finally {
    if (edgeExitCode === null) await cluster.close().catch(() => undefined);
    if (!o.dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

async function measure(
  cluster: Cluster,
  ids: string[],
  modelPath: string,
  o: ScaleOutOptions,
  log: (line: string) => void,
): Promise<Omit<ScaleOutResult, "edgeExitCode">> {
  const hotSlots = Math.min(...(await cluster.nodes()).map((n) => n.capacity.slots ?? 0));
  const blocks = o.blocks ?? 3 * hotSlots;
  if (blocks <= hotSlots)
    throw new ScaleOutSetupError(
      `--blocks ${blocks} fits one node's hot tier (${hotSlots} slots): use more than ${hotSlots}`,
    );
  log(`hot tier: ${hotSlots} slots per node; depositing ${blocks} blocks of ~${o.blockTokens} tokens`);
  const library = await depositLibrary(cluster, {
    blocks,
    blockTokens: o.blockTokens,
    maxTokens: o.maxTokens,
    log,
  });
  // Copies still in flight after the deposits finish before anything is measured.
  const rebalance = await cluster.admin("POST", "/admin/rebalance");
  if (rebalance.status !== 200) throw new Error(`POST /admin/rebalance: HTTP ${rebalance.status}`);
  const replicas = Math.min(2, ids.length);
  const afterDeposit = await checkLibrary(cluster, library, ids, replicas);
  log(
    `library: ${afterDeposit.grafted}/${blocks} graft, ${afterDeposit.underReplicated.length} under-replicated`,
  );
  const bodies = workloadBodies(library, 4096);
  const load = (rate: number, durationS: number) =>
    runLoad(
      {
        url: cluster.edgeUrl,
        key: cluster.key,
        path: "graft",
        rate,
        durationS,
        timeoutMs: o.timeoutMs,
        maxTokens: o.maxTokens,
      },
      bodies,
    );

  // Each topology starts from the same state: every node restarted, so no node keeps the hot and
  // warm tiers an earlier phase filled (routing prefers them); what is warm then is what each
  // node's warm start read back from its disk.
  const [first] = ids as [string, ...string[]];
  const restart = async (up: string[]): Promise<PhaseStart> => {
    await Promise.all(ids.map((id) => cluster.stopNode(id)));
    let since = Date.now();
    await Promise.all(up.map((id) => cluster.startNode(id)));
    // A heartbeat sent after warm start ended tells the edge which blocks are warm.
    if (o.waitWarmStart) since = await cluster.waitWarmStart(up);
    await cluster.waitLive(up, since);
    return phaseStart(cluster, up, o.waitWarmStart, log);
  };
  const oneStart = await restart([first]);
  let probe: ScaleOutResult["probe"] = null;
  let rates = o.rates;
  if (rates === "auto") {
    probe = await closedLoopProbe(cluster, bodies, 2 * hotSlots, Math.max(5, o.warmupS), o.timeoutMs);
    log(`probe (one node, ${probe.concurrency} in flight): ${probe.okPerS} grafts/s`);
    const c = Math.max(0.5, probe.okPerS);
    const at = (ks: number[]) => [...new Set(ks.map((k) => Math.max(0.5, round1(k * c))))];
    const n = ids.length;
    rates = { one: at([0.5, 0.75, 1, 1.25]), all: at([0.5, 1, 0.75 * n, 0.9 * n, n, 1.15 * n]) };
  } else if (o.warmupS > 0) await load(rates.one[0] as number, o.warmupS);
  const oneRuns = await ladder(cluster, [first], 1, rates.one, load, o, log);
  const p99BoundMs = o.p99BoundMs ?? Math.max(1, 5 * (oneRuns[0]?.latencyMs?.p50 ?? 200));

  const allStart = await restart(ids);
  if (o.warmupS > 0) await load(rates.all[0] as number, o.warmupS);
  const allRuns = await ladder(cluster, ids, ids.length, rates.all, load, o, log);
  const topologies = [
    { nodes: 1, runs: oneRuns, phaseStart: oneStart },
    { nodes: ids.length, runs: allRuns, phaseStart: allStart },
  ].map((t) => {
    for (const r of t.runs)
      r.sustained =
        r.errorRate <= 0.01 &&
        r.throughputRps >= 0.9 * r.rate &&
        (r.latencyMs?.p99 ?? Infinity) <= p99BoundMs;
    const capacityRps = Math.max(0, ...t.runs.filter((r) => r.sustained).map((r) => r.throughputRps));
    const served = t.runs.reduce((n, r) => n + r.affinity.hot + r.affinity.warm + r.affinity.cold, 0);
    const hotOrWarm = t.runs.reduce((n, r) => n + r.affinity.hot + r.affinity.warm, 0);
    return {
      ...t,
      capacityRps,
      hotOrWarmShare: served > 0 ? Math.round((hotOrWarm / served) * 1000) / 1000 : null,
    };
  });
  const [one, all] = topologies as [(typeof topologies)[0], (typeof topologies)[0]];
  log(
    `hot or warm: 1 node ${one.hotOrWarmShare ?? "-"}, ${ids.length} nodes ${all.hotOrWarmShare ?? "-"} of the grafts served`,
  );
  log(
    `capacity: 1 node ${one.capacityRps} req/s, ${ids.length} nodes ${all.capacityRps} req/s (p99 <= ${p99BoundMs} ms)`,
  );

  let failover: FailoverReport | null = null;
  if (o.failover) {
    const rate =
      o.failover.rate === "auto"
        ? Math.max(0.5, round1(0.8 * (all.capacityRps || (allRuns[0]?.rate ?? 1))))
        : o.failover.rate;
    await pause(o.pauseS);
    log(
      `failover: ${rate} req/s for ${o.failover.durationS} s, ${ids.at(-1)} killed at ${o.failover.killAtS} s`,
    );
    failover = await runFailover(cluster, bodies, {
      rate,
      durationS: o.failover.durationS,
      killAtS: o.failover.killAtS,
      downS: o.failover.downS,
      victim: ids.at(-1) as string,
      timeoutMs: o.timeoutMs,
      maxTokens: o.maxTokens,
      log,
    });
    await cluster.waitLive(ids);
  }
  const atEnd = await checkLibrary(cluster, library, ids, replicas);
  log(`at the end: ${atEnd.grafted}/${blocks} blocks graft with their first output hash`);
  const tokens = library.map((b) => b.tokenCount).sort((a, b) => a - b);
  return {
    bench: "scale-out",
    machine: { cpus: cpus().length, node: process.version, platform: `${platform()} ${release()}` },
    model: modelPath,
    config: {
      nodes: ids.length,
      devices: o.devices ?? null,
      hotSlotsPerNode: hotSlots,
      replicas,
      blocks,
      blockTokens: {
        target: o.blockTokens,
        min: tokens[0] ?? 0,
        median: percentiles(tokens)?.p50 ?? 0,
        max: tokens.at(-1) ?? 0,
      },
      maxTokens: o.maxTokens,
      durationS: o.durationS,
      heartbeatMs: o.heartbeatMs,
      waitWarmStart: o.waitWarmStart,
    },
    probe,
    p99BoundMs,
    topologies,
    speedup: one.capacityRps > 0 ? Math.round((all.capacityRps / one.capacityRps) * 100) / 100 : null,
    failover,
    library: { afterDeposit, atEnd },
  };
}

/** The tiers each running node reports now (its own `/health`), logged one line a node. */
async function phaseStart(
  cluster: Cluster,
  up: string[],
  waited: boolean,
  log: (line: string) => void,
): Promise<PhaseStart> {
  const mb = (bytes: number | null | undefined) =>
    bytes == null ? "-" : String(Math.round(bytes / 2 ** 20));
  const nodes: PhaseStart["nodes"] = {};
  for (const id of up) {
    const h = await cluster.health(id);
    const view = {
      hot: h.tiers.hot.length,
      warm: h.tiers.warm.length,
      stored: h.tiers.coldCount,
      warmBytes: h.warmBytes?.used ?? null,
      warmBudgetBytes: h.warmBytes?.budget ?? null,
      warmStart: h.warmStart ?? null,
    };
    nodes[id] = view;
    const ws = view.warmStart;
    log(
      `phase start: ${id} ${view.warm}/${view.stored} blocks warm (${mb(view.warmBytes)} of ${mb(view.warmBudgetBytes)} MB), ${view.hot} hot; ` +
        `warm start ${ws ? `${ws.state}, ${ws.blocks} blocks read${ws.ms !== null ? ` in ${ws.ms} ms` : ""}, ${ws.skipped} left cold, ${ws.corrupt.length} corrupt` : "not reported"}`,
    );
  }
  log(
    waited
      ? "phase begins after warm start finished on every node"
      : "phase begins without waiting for warm start (--no-wait-warm-start)",
  );
  return { waitedForWarmStart: waited, nodes };
}

/** Each rate in turn against the running nodes, with the nodes' tier counters and the edge's routing around each. */
async function ladder(
  cluster: Cluster,
  running: string[],
  nodes: number,
  rates: number[],
  load: (rate: number, durationS: number) => Promise<LoadReport>,
  o: ScaleOutOptions,
  log: (line: string) => void,
): Promise<ScaleOutRun[]> {
  const runs: ScaleOutRun[] = [];
  for (const rate of rates) {
    await pause(o.pauseS);
    const [hitsBefore, edgeBefore] = [await cluster.tierHits(), await cluster.nodes()];
    const report = await load(rate, o.durationS);
    const [hitsAfter, edgeAfter] = [await cluster.tierHits(), await cluster.nodes()];
    const affinity = { hot: 0, warm: 0, cold: 0 };
    for (const id of running)
      for (const tier of ["hot", "warm", "cold"] as const)
        affinity[tier] += (hitsAfter[id]?.[tier] ?? 0) - (hitsBefore[id]?.[tier] ?? 0);
    const served = affinity.hot + affinity.warm + affinity.cold;
    const grafts = (views: typeof edgeBefore, id: string) =>
      sum(views.find((n) => n.id === id)?.metrics?.grafts ?? {});
    const run: ScaleOutRun = {
      ...report,
      nodes,
      failed: report.offered - report.ok,
      affinity: {
        ...affinity,
        hotOrWarmShare:
          served > 0 ? Math.round(((affinity.hot + affinity.warm) / served) * 1000) / 1000 : null,
      },
      graftsByNode: Object.fromEntries(
        running.map((id) => [id, grafts(edgeAfter, id) - grafts(edgeBefore, id)]),
      ),
      sustained: false,
    };
    const lat = report.latencyMs;
    log(
      `${nodes} node(s) @ ${rate}/s: ${report.ok}/${report.offered} ok, ${report.throughputRps} req/s, ` +
        `${lat ? `p50 ${lat.p50} p95 ${lat.p95} p99 ${lat.p99} ms` : "no 2xx"}, hot/warm ${run.affinity.hotOrWarmShare ?? "-"}`,
    );
    runs.push(run);
  }
  return runs;
}

/** `concurrency` grafts in flight at all times for `durationS`: what one node completes per second. */
async function closedLoopProbe(
  cluster: Cluster,
  bodies: string[],
  concurrency: number,
  durationS: number,
  timeoutMs: number,
): Promise<NonNullable<ScaleOutResult["probe"]>> {
  const end = performance.now() + durationS * 1000;
  let next = 0;
  let ok = 0;
  const failures: Record<string, number> = {};
  const worker = async () => {
    while (performance.now() < end) {
      const body = bodies[next++ % bodies.length] as string;
      const res = await fetch(`${cluster.edgeUrl}/v1/solve`, {
        method: "POST",
        headers: { authorization: `Bearer ${cluster.key}`, "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      }).catch((err: Error) => err.name);
      if (typeof res === "string") failures[res] = (failures[res] ?? 0) + 1;
      else if (res.ok) {
        await res.arrayBuffer();
        ok++;
      } else {
        const answer = (await res.json().catch(() => null)) as { error?: { code?: string } } | null;
        const code = answer?.error?.code ?? `http_${res.status}`;
        failures[code] = (failures[code] ?? 0) + 1;
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { concurrency, durationS, okPerS: round1(ok / ((performance.now() - t0) / 1000)), failures };
}
