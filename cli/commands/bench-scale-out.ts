/** `kvgraft bench scale-out`: flags to bench/scale-out.ts options, a summary table, the JSON document. */
import type { ScaleOutResult } from "../../bench/scale-out.js";
import { intFlag, requireGgufFile, UsageError } from "../args.js";
import { command } from "../command.js";
import { inheritedEnv } from "../config.js";
import { readCliGpuEnv } from "../gpu-env.js";

export const SCALE_OUT_HELP = `usage: kvgraft bench scale-out [--model FILE] [--nodes 2] [--devices 0,1] [--slots N|vram] [--context N]
         [--blocks B] [--block-tokens 2000] [--max-tokens 4] [--rates-one R,.. --rates-all R,..]
         [--duration 10] [--warmup 5] [--pause 2] [--p99-bound-ms MS] [--timeout-ms 30000]
         [--heartbeat-ms 1000] [--failover-rate auto|R] [--failover-duration 40] [--kill-at 10]
         [--down 5] [--no-failover] [--no-wait-warm-start] [--data-dir DIR] [--json]

Starts kvgraft serve edge and N kvgraft serve gpu nodes (own data directory and port each; --devices
gives each node its CUDA_VISIBLE_DEVICES), registered through heartbeats, and deposits B blocks of
about --block-tokens tokens (default B: 3x one node's hot slots; B must exceed them), each on 2 nodes.
Then the graft workload (bench edge's constant-rate loop, spread over the library) at each rate
against 1 node (the others stopped) and against all N, every node restarted before each; a phase
begins once warm start (the nodes refilling their warm tier from disk) has finished on every node,
unless --no-wait-warm-start, and the tiers each node reports then are printed: offered, ok, failed, throughput,
p50/p95/p99, and the share of grafts the nodes served hot or warm. Without --rates-one/--rates-all
the rates come from a closed-loop probe of one node (0.5-1.25x its capacity; 0.5-1.15xN for N).
A run is sustained with <= 1% errors, >= 90% of its rate served and p99 <= --p99-bound-ms (default
5x the p50 of the first one-node run); capacity is the best sustained throughput. Then the failover
run: at --failover-rate (auto: 80% of the N-node capacity) the last node gets SIGKILL at --kill-at s
and restarts --down s later: per-second timeline, failed requests, extra latency, time until the
restarted node takes grafts again. Finally every block must still graft with its first output hash
(exit 1 otherwise). MODEL_PATH works for --model (default: a generated tiny model).`;

/** Runs the benchmark; exit 0 when no verified block was lost and the edge stopped cleanly. */
export const benchScaleOutCommand = command(
  {
    help: SCALE_OUT_HELP,
    flags: {
      model: { type: "string" },
      nodes: { type: "string" },
      devices: { type: "string" },
      slots: { type: "string" },
      context: { type: "string" },
      blocks: { type: "string" },
      "block-tokens": { type: "string" },
      "max-tokens": { type: "string" },
      "rates-one": { type: "string" },
      "rates-all": { type: "string" },
      duration: { type: "string" },
      warmup: { type: "string" },
      pause: { type: "string" },
      "p99-bound-ms": { type: "string" },
      "timeout-ms": { type: "string" },
      "heartbeat-ms": { type: "string" },
      "failover-rate": { type: "string", default: "auto" },
      "failover-duration": { type: "string" },
      "kill-at": { type: "string" },
      down: { type: "string" },
      "no-failover": { type: "boolean", default: false },
      "no-wait-warm-start": { type: "boolean", default: false },
      "data-dir": { type: "string" },
    },
  },
  async (flags, out) => {
    const nodes = intFlag(flags.nodes, "nodes", 2, 2);
    const devices = flags.devices?.split(",").map((d) => d.trim());
    if (devices && devices.length !== nodes)
      throw new UsageError(`--devices names ${devices.length} devices for ${nodes} nodes`);
    if (flags.slots !== undefined && flags.slots !== "vram") intFlag(flags.slots, "slots", 2);
    if (!flags["rates-one"] !== !flags["rates-all"])
      throw new UsageError("--rates-one and --rates-all go together (neither: rates from a probe)");
    // Rates in requests per second, fractions allowed (the probe's own rates are, e.g. 3.3).
    const rateList = (v: string, name: string) => {
      const list = v.split(",").map((x) => Number(x.trim()));
      if (list.length === 0 || list.some((r) => !(r > 0) || !Number.isFinite(r)))
        throw new UsageError(
          `--${name} takes positive numbers of requests per second, comma-separated, got ${v}`,
        );
      return list;
    };
    const failoverRate = flags["failover-rate"] === "auto" ? "auto" : Number(flags["failover-rate"]);
    if (failoverRate !== "auto" && !(failoverRate > 0))
      throw new UsageError("--failover-rate takes auto or a positive number of requests per second");
    const failoverS = intFlag(flags["failover-duration"], "failover-duration", 40);
    const killAtS = intFlag(flags["kill-at"], "kill-at", 10);
    const downS = intFlag(flags.down, "down", 5, 0);
    if (killAtS >= failoverS)
      throw new UsageError("--kill-at must come before the end of --failover-duration");
    const modelPath = flags.model ?? readCliGpuEnv().MODEL_PATH;
    const { benchScaleOut, ScaleOutSetupError } = await import("../../bench/scale-out.js");
    const run = benchScaleOut({
      ...(modelPath ? { modelPath: requireGgufFile(modelPath, flags.model ? "--model" : "MODEL_PATH") } : {}),
      ...(flags["data-dir"] ? { dataDir: flags["data-dir"] } : {}),
      nodes,
      ...(devices ? { devices } : {}),
      ...(flags.slots ? { slots: flags.slots } : {}),
      ...(flags.context ? { contextSize: intFlag(flags.context, "context", 4096) } : {}),
      ...(flags.blocks ? { blocks: intFlag(flags.blocks, "blocks", 6) } : {}),
      blockTokens: intFlag(flags["block-tokens"], "block-tokens", 2000, 0),
      maxTokens: intFlag(flags["max-tokens"], "max-tokens", 4),
      rates:
        flags["rates-one"] && flags["rates-all"]
          ? { one: rateList(flags["rates-one"], "rates-one"), all: rateList(flags["rates-all"], "rates-all") }
          : "auto",
      durationS: intFlag(flags.duration, "duration", 10),
      warmupS: intFlag(flags.warmup, "warmup", 5, 0),
      pauseS: intFlag(flags.pause, "pause", 2, 0),
      ...(flags["p99-bound-ms"] ? { p99BoundMs: positiveNumber(flags["p99-bound-ms"], "p99-bound-ms") } : {}),
      timeoutMs: intFlag(flags["timeout-ms"], "timeout-ms", 30_000),
      heartbeatMs: intFlag(flags["heartbeat-ms"], "heartbeat-ms", 1000, 50),
      waitWarmStart: !flags["no-wait-warm-start"],
      failover: flags["no-failover"] ? null : { rate: failoverRate, durationS: failoverS, killAtS, downS },
      env: inheritedEnv(),
      log: (line) => out.progress(`[${Math.round(performance.now() / 100) / 10} s] ${line}`),
    });
    const result = await run.catch((err: unknown) => {
      throw err instanceof ScaleOutSetupError ? new UsageError(err.message) : err;
    });
    const rows = result.topologies.flatMap((t) =>
      t.runs.map(
        (r) =>
          `| ${t.nodes} | ${r.rate} | ${r.offered} | ${r.ok} | ${r.failed} | ${r.throughputRps} | ` +
          `${r.latencyMs ? `${r.latencyMs.p50} | ${r.latencyMs.p95} | ${r.latencyMs.p99}` : "- | - | -"} | ` +
          `${r.affinity.hotOrWarmShare ?? "-"} | ${r.sustained ? "yes" : "no"} |`,
      ),
    );
    const f = result.failover;
    process.stdout.write(
      "| nodes | rate/s | offered | ok | failed | req/s | p50 ms | p95 ms | p99 ms | hot/warm | sustained |\n" +
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n" +
        `${rows.join("\n")}\n` +
        `${result.topologies.map(phaseLine).join("\n")}\n` +
        `capacity (p99 <= ${result.p99BoundMs} ms): ${result.topologies.map((t) => `${t.nodes} node(s) ${t.capacityRps} req/s`).join(", ")}; speedup ${result.speedup ?? "-"}\n` +
        (f
          ? `failover @ ${f.rate}/s: ${f.failed} failed of ${f.load.offered}; window p99 ${f.window.latencyMs?.p99 ?? "-"} ms ` +
            `(before the kill ${f.beforeKill?.p99 ?? "-"} ms); restarted node took traffic ${f.timeToTrafficS ?? "never"} s after its restart\n`
          : "") +
        `library: ${result.library.atEnd.grafted}/${result.library.atEnd.blocks} blocks graft with their first output hash\n`,
    );
    out.result(result);
    return result.library.atEnd.lost.length === 0 && result.edgeExitCode === 0 ? 0 : 1;
  },
);

/** One topology's start (tiers per node, waited for warm start or not) and its hot-or-warm share. */
function phaseLine(t: ScaleOutResult["topologies"][number]): string {
  const nodes = Object.entries(t.phaseStart.nodes)
    .map(([id, n]) => `${id} ${n.warm}/${n.stored} warm, ${n.hot} hot`)
    .join("; ");
  return (
    `${t.nodes} node(s): at the start ${nodes} (${t.phaseStart.waitedForWarmStart ? "after warm start" : "not waiting for warm start"}); ` +
    `hot or warm ${t.hotOrWarmShare ?? "-"} of the grafts`
  );
}

/** A positive number flag (fractions allowed), or a usage error. */
function positiveNumber(value: string, name: string): number {
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n))
    throw new UsageError(`--${name} takes a positive number, got ${value}`);
  return n;
}
