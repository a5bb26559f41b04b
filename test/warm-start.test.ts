/**
 * Warm start (gpu-node/blocks/restore/warm-start.ts) on `kvgraft serve gpu` child processes over real
 * block files: a restarted node reads its blocks back into the warm tier, most recently used
 * first and within the warm budget, reports them in /health and /metrics, and serves grafts from
 * them; a corrupt file is not warmed but quarantined and reported; KVGRAFT_WARM_START=off keeps
 * the warm tier empty after a start. The last part runs on kvgraft's engine build (the pinned
 * arena) and is skipped, saying why, where that build is absent.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { createGpuClient, type GpuNodeClient } from "../shared/gpu-client.js";
import { createLogger } from "../shared/http/logger.js";
import type { BlockManifest, Health } from "../shared/protocol.js";
import { kvgraftSourceArgs, supervise } from "../tools/process/supervise.js";
import { noEngineBuildReason } from "./helpers/engine-build.js";
import { syntheticModel } from "./helpers/models.js";
import { skipEachWith } from "./helpers/skip.js";

const root = join(import.meta.dirname, "..");
const SECRET = "warm-start-secret-0123456789";
const model = syntheticModel("tiny-llama");
const dataDir = mkdtempSync(join(tmpdir(), "kvgraft-warm-start-"));
const children: ChildProcess[] = [];
const QUERY = " What follows from this? Answer:";
const text = (label: string) =>
  Array.from({ length: 14 }, (_, k) => `${label} fact${k} alpha beta gamma`).join(" ");

interface Node {
  client: GpuNodeClient;
  stderr: () => string;
  stop: () => Promise<unknown>;
}

/** Starts `serve gpu` on the shared data directory with extra environment; resolves when ready. */
async function startNode(env: Record<string, string> = {}): Promise<Node> {
  const node = supervise({
    name: "serve gpu",
    args: kvgraftSourceArgs(
      ...["serve", "gpu", "--model", model, "--port", "0", "--data-dir", dataDir, "--context", "1024"],
      ...["--no-sandbox", "--json"],
    ),
    cwd: root,
    env: { ...process.env, KVGRAFT_GPU_SECRET: SECRET, KVGRAFT_LOG_LEVEL: "info", ...env },
    ready: (line) => line as { url: string },
  });
  children.push(node.child);
  const { url } = await node.ready;
  return {
    client: createGpuClient({ baseUrl: url, secret: SECRET }),
    stderr: node.stderr,
    stop: () => node.stop(30_000),
  };
}

/** Health once warm start has finished (or is off). */
async function afterWarmStart(node: Node): Promise<Health> {
  for (let i = 0; i < 600; i++) {
    const health = await node.client.health();
    if (health.warmStart?.state === "done" || health.warmStart?.state === "off") return health;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("warm start did not finish in 30 s");
}

const metric = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
const sorted = (ids: readonly string[]) => [...ids].sort();

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
});

describe("serve gpu: warm start", () => {
  const blocks: BlockManifest[] = [];

  it("a restarted node reads its blocks back into the warm tier and serves grafts from it", async () => {
    const first = await startNode();
    for (const label of ["ws-a", "ws-b", "ws-c"]) blocks.push(await first.client.deposit(text(label)));
    // A deposit leaves its block warm, without waiting for a graft.
    expect(sorted((await first.client.health()).tiers.warm)).toEqual(sorted(blocks.map((b) => b.sha256)));
    await first.stop();

    const node = await startNode();
    const health = await afterWarmStart(node);
    const ids = blocks.map((b) => b.sha256);
    expect(sorted(health.tiers.warm)).toEqual(sorted(ids));
    expect(health.tiers.hot).toEqual([]);
    expect(health.warmStart).toMatchObject({ state: "done", stored: 3, blocks: 3, skipped: 0, corrupt: [] });
    expect(health.warmStart?.bytes).toBe(blocks.reduce((n, b) => n + b.sizeBytes, 0));
    const metrics = await node.client.metrics();
    expect(metric(metrics, "kvgraft_warm_start_blocks_total")).toBe(3);
    expect(metric(metrics, "kvgraft_warm_start_bytes_total")).toBe(health.warmStart?.bytes);
    expect(node.stderr()).toContain("warm start: done");

    // Served from RAM, not disk: the node's own tier counters say so.
    const graft = await node.client.graft({ blockId: ids[0] as string, query: QUERY, maxTokens: 4 });
    expect(graft.tier).toBe("warm");
    const after = await node.client.metrics();
    expect(after).toMatch(/^kvgraft_tier_hits_total\{tier="warm"\} 1$/m);
    expect(after).toMatch(/^kvgraft_tier_hits_total\{tier="cold"\} 0$/m);
    await node.stop();
  });

  it("KVGRAFT_WARM_START=off keeps today's behaviour: nothing warm after the start, the first graft cold", async () => {
    const node = await startNode({ KVGRAFT_WARM_START: "off" });
    const health = await afterWarmStart(node);
    expect(health.warmStart?.state).toBe("off");
    expect(health.tiers.warm).toEqual([]);
    const graft = await node.client.graft({
      blockId: blocks[0]?.sha256 as string,
      query: QUERY,
      maxTokens: 4,
    });
    expect(graft.tier).toBe("cold");
    expect(metric(await node.client.metrics(), "kvgraft_warm_start_blocks_total")).toBe(0);
    await node.stop();
  });

  it("an invalid KVGRAFT_WARM_START is a configuration error naming it", async () => {
    const node = supervise({
      name: "serve gpu",
      args: kvgraftSourceArgs("serve", "gpu", "--model", model, "--data-dir", dataDir, "--no-sandbox"),
      cwd: root,
      env: { ...process.env, KVGRAFT_GPU_SECRET: SECRET, KVGRAFT_WARM_START: "maybe" },
      ready: () => true,
    });
    children.push(node.child);
    await expect(node.ready).rejects.toThrow();
    expect((await node.exited).code).toBe(2);
    expect(node.stderr()).toMatch(/KVGRAFT_WARM_START/);
  });

  it("the warm budget is respected: the most recently used blocks that fit, the rest left cold", async () => {
    // Block a was grafted last (the tests above), c deposited last: those two are the most recent.
    const [a, b, c] = blocks as [BlockManifest, BlockManifest, BlockManifest];
    const budget = a.sizeBytes + c.sizeBytes;
    const node = await startNode({ KVGRAFT_WARM_BUDGET_BYTES: String(budget) });
    const health = await afterWarmStart(node);
    expect(sorted(health.tiers.warm)).toEqual(sorted([a.sha256, c.sha256]));
    expect(health.warmStart).toMatchObject({ blocks: 2, skipped: 1, corrupt: [] });
    expect(health.warmBytes).toEqual({ used: budget, budget });
    const cold = await node.client.graft({ blockId: b.sha256, query: QUERY, maxTokens: 4 });
    expect(cold.tier).toBe("cold");
    await node.stop();
  });

  it("a corrupt block file is not warmed: it is quarantined and reported", async () => {
    const [a, b] = blocks as [BlockManifest, BlockManifest];
    const path = join(dataDir, "blocks", `${b.sha256}.state`);
    const bytes = readFileSync(path);
    const at = Math.floor(bytes.length / 2);
    bytes[at] = (bytes[at] ?? 0) ^ 0x01;
    writeFileSync(path, bytes);

    const node = await startNode();
    const health = await afterWarmStart(node);
    expect(health.warmStart?.corrupt).toEqual([b.sha256]);
    expect(health.tiers.warm).not.toContain(b.sha256);
    expect(health.tiers.warm).toContain(a.sha256);
    expect(health.tiers.coldCount).toBe(2);
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(join(dataDir, "quarantine")).some((f) => f.startsWith(`${b.sha256}.state`))).toBe(
      true,
    );
    expect((await node.client.listBlocks()).map((m) => m.sha256)).not.toContain(b.sha256);
    expect(metric(await node.client.metrics(), "kvgraft_warm_start_corrupt_total")).toBe(1);
    expect(node.stderr()).toContain("warm start: block failed its hash check and was quarantined");
    await node.stop();
  });
});

const NO_ENGINE = await noEngineBuildReason();

describe("engine build: warm start fills the pinned arena", () => {
  skipEachWith(NO_ENGINE, "warm-start.test (engine-build part)");
  it("a reopened store's blocks are read into the arena, chunk-checked, and grafts load from it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kvgraft-warm-start-engine-"));
    const engine = await Engine.open({ modelPath: model, slots: 2, contextSize: 1024, binary: "lastBuild" });
    const log = createLogger({ level: "silent" });
    try {
      const first = await BlockService.open({ engine, dataDir: dir, warmBudgetBytes: 256 * 2 ** 20 });
      const kept = await first.deposit(text("arena-kept"));
      const damaged = await first.deposit(text("arena-damaged"));
      const local = await first.graft(kept.sha256, QUERY, { maxTokens: 4 });
      await first.close();
      const path = first.store.statePath(damaged.sha256);
      const bytes = readFileSync(path);
      bytes[bytes.length - 5] = (bytes[bytes.length - 5] ?? 0) ^ 0x01;
      writeFileSync(path, bytes);

      for (const s of engine.slots) await s.clearHistory();
      const svc = await BlockService.open({ engine, dataDir: dir, warmBudgetBytes: 256 * 2 ** 20 });
      expect(svc.state.arena).not.toBeNull();
      const status = await svc.warmStart.start(log);
      expect(status).toMatchObject({ state: "done", blocks: 1, corrupt: [damaged.sha256] });
      expect(svc.snapshot().warm).toEqual([kept.sha256]);
      expect(svc.store.has(damaged.sha256)).toBe(false);
      const warm = await svc.graft(kept.sha256, QUERY, { maxTokens: 4 });
      expect(warm.tier).toBe("warm");
      expect(warm.outputSha256).toBe(local.outputSha256);
      await svc.close();
    } finally {
      await engine.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
