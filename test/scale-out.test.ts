/**
 * `kvgraft bench scale-out` end to end on CPU, bounded for CI: the real command in a child process
 * starts `serve edge` and two `serve gpu` nodes on the tiny model, deposits a library larger than
 * one node's hot tier, runs the graft workload against one node and against two, kills the second
 * node under load (SIGKILL) and restarts it, and prints one JSON document. Checked: its shape, that
 * the figures add up (timeline against the load, failed against offered), and that every deposited
 * block still grafts with its first output hash afterwards, on both replicas' nodes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ScaleOutResult } from "../bench/scale-out.js";
import { kvgraftSourceArgs, supervise } from "../tools/process/supervise.js";
import { syntheticModel } from "./helpers/models.js";

const root = join(import.meta.dirname, "..");
const work = mkdtempSync(join(tmpdir(), "kvgraft-scale-out-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

// Deposits check their programs in the nodes' sandbox.

describe("kvgraft bench scale-out", () => {
  it("measures one node and two, survives a SIGKILL under load, and loses no verified block", async () => {
    const stdout: string[] = [];
    const run = supervise({
      name: "bench scale-out",
      args: kvgraftSourceArgs(
        ...["bench", "scale-out", "--model", syntheticModel("tiny-llama"), "--data-dir", join(work, "run")],
        ...["--context", "1024", "--blocks", "3", "--block-tokens", "100", "--heartbeat-ms", "500"],
        ...["--rates-one", "2", "--rates-all", "2", "--duration", "2", "--warmup", "0", "--pause", "0"],
        ...["--failover-duration", "8", "--kill-at", "2", "--down", "1", "--json"],
      ),
      cwd: root,
      env: { ...process.env, KV_THREADS: "1" },
      onStdoutLine: (line) => stdout.push(line),
    });
    const status = await run.exited;
    expect(status, run.stderr().slice(-4000)).toEqual({ code: 0, signal: null });
    const result = JSON.parse(stdout.at(-1) as string) as ScaleOutResult;

    expect(result.bench).toBe("scale-out");
    expect(result.config).toMatchObject({ nodes: 2, replicas: 2, blocks: 3 });
    expect(result.config.blocks).toBeGreaterThan(result.config.hotSlotsPerNode);
    expect(result.topologies.map((t) => t.nodes)).toEqual([1, 2]);
    for (const t of result.topologies) {
      expect(t.runs).toHaveLength(1);
      for (const r of t.runs) {
        expect(r).toMatchObject({ rate: 2, durationS: 2, offered: 4 });
        expect(r.ok + r.failed).toBe(r.offered);
        expect(r.latencyMs?.p99).toBeGreaterThan(0);
        const served = r.affinity.hot + r.affinity.warm + r.affinity.cold;
        expect(served).toBeGreaterThanOrEqual(r.ok);
        expect(r.affinity.hotOrWarmShare).toBeGreaterThanOrEqual(0);
        expect(Object.keys(r.graftsByNode).sort()).toEqual(t.nodes === 1 ? ["gpu-0"] : ["gpu-0", "gpu-1"]);
        expect(Object.values(r.graftsByNode).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(r.ok);
      }
      expect(t.capacityRps).toBeGreaterThanOrEqual(0);
      // Each phase began after warm start had read all 3 blocks back on every restarted node, so
      // no graft was served cold.
      expect(t.phaseStart.waitedForWarmStart).toBe(true);
      expect(Object.keys(t.phaseStart.nodes).sort()).toEqual(t.nodes === 1 ? ["gpu-0"] : ["gpu-0", "gpu-1"]);
      for (const n of Object.values(t.phaseStart.nodes)) {
        expect(n).toMatchObject({ hot: 0, warm: 3, stored: 3 });
        expect(n.warmStart).toMatchObject({ state: "done", blocks: 3, corrupt: [] });
      }
      expect(t.hotOrWarmShare).toBe(1);
    }

    const f = result.failover;
    if (!f) throw new Error("no failover report");
    expect(f).toMatchObject({ victim: "gpu-1", killAtS: 2, downS: 1, durationS: 8 });
    expect(f.events.killedAtS).toBeGreaterThanOrEqual(2);
    expect(f.events.restartedAtS).toBeGreaterThanOrEqual(f.events.killedAtS + 1);
    expect(f.events.readyAtS).toBeGreaterThan(f.events.restartedAtS);
    expect(f.timeline).toHaveLength(8);
    expect(f.timeline.reduce((a, s) => a + s.sent, 0)).toBe(f.load.offered);
    expect(f.timeline.reduce((a, s) => a + s.failed, 0)).toBe(f.failed);
    expect(f.failed).toBe(f.load.offered - f.load.ok);
    expect(f.window.fromS).toBe(f.events.killedAtS);

    for (const check of [result.library.afterDeposit, result.library.atEnd])
      expect(check).toEqual({ blocks: 3, grafted: 3, lost: [], underReplicated: [] });
    expect(result.edgeExitCode).toBe(0);
  }, 240_000);
});
