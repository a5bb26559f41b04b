/**
 * Block store faults at the service level, through `kvgraft serve gpu` as a child process:
 * SIGKILL during large deposits over HTTP (a bounded run of scripts/kill-loop.ts), a full disk
 * (a small tmpfs as the data directory), and damaged block files found on read, which the GPU
 * node quarantines and the edge then stops routing to.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerProblem } from "../../edge/db/library.js";
import { type EdgeServer, startEdgeServer } from "../../edge/runtime/node.js";
import { GpuError } from "../../shared/gpu-client.js";
import { silentLogger } from "../../shared/http/logger.js";
import { normalizeProblem, problemFingerprint, problemTemplate } from "../../shared/normalize.js";
import { syntheticModel } from "../helpers/models.js";
import { type GpuChild, killHard, startGpuChild } from "./helpers.js";
import { largeText, runKillLoop } from "./kill-loop.js";

const SECRET = "reliability-secret-0123456789";
const ITERATIONS = Number(process.env.KVGRAFT_KILL_ITERATIONS ?? 5);
const SEED = Number(process.env.KVGRAFT_KILL_SEED ?? Date.now() % 100_000);
const model = syntheticModel("tiny-llama");
const temp = mkdtempSync(join(tmpdir(), "kvgraft-rel-kill-"));
const dataDir = join(temp, "data");
const nodes: GpuChild[] = [];
const mounts: string[] = [];

afterAll(async () => {
  for (const n of nodes) await killHard(n);
  for (const m of mounts) {
    try {
      execFileSync("umount", [m]);
    } catch {
      // already gone
    }
  }
  rmSync(temp, { recursive: true, force: true });
});

async function node(dir: string): Promise<GpuChild> {
  const n = await startGpuChild({ modelPath: model, dataDir: dir, secret: SECRET });
  nodes.push(n);
  return n;
}

describe("kill -9 of serve gpu during large deposits", () => {
  it(`keeps every acknowledged block and lists only whole ones across ${ITERATIONS} kills`, async () => {
    const lines: string[] = [];
    const report = await runKillLoop({
      modelPath: model,
      dataDir,
      secret: SECRET,
      iterations: ITERATIONS,
      seed: SEED,
      log: (l) => lines.push(l),
    });
    expect(report.failures, `seed ${SEED}\n${lines.join("\n")}`).toEqual([]);
    expect(report.listedAtEnd).toBeGreaterThanOrEqual(report.acknowledged);
    expect(report.verified).toBeGreaterThanOrEqual(report.listedAtEnd);
    // Each 4th kill aims between a state file's rename and its manifest's; over a long run some
    // surely land there, so recovery had work (a short run may miss: the manifest write is quick).
    if (ITERATIONS >= 20) expect(report.killsWithLeftovers, lines.join("\n")).toBeGreaterThan(0);
    // The quarantined half-blocks were kept aside, not deleted.
    if (report.killsWithLeftovers > 0)
      expect(readdirSync(join(dataDir, "quarantine")).length + report.killsWithLeftovers).toBeGreaterThan(0);
  }, 300_000);
});

describe("a damaged block found on read", () => {
  let gpu: GpuChild;
  let edge: EdgeServer;
  let adminKey: string;

  beforeAll(async () => {
    gpu = await node(join(temp, "corrupt"));
    edge = await startEdgeServer({
      env: {
        LIBSQL_URL: `file:${join(temp, "edge.db")}`,
        KVGRAFT_GPU_URL: gpu.url,
        KVGRAFT_GPU_SECRET: SECRET,
      },
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger,
    });
    adminKey = edge.generatedAdminKey as string;
  });
  afterAll(async () => {
    await edge?.close();
  });

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${edge.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    // biome-ignore lint/suspicious/noExplicitAny: checked by the assertions
    return { status: res.status, body: (await res.json()) as any };
  };

  it("quarantines a flipped byte and a truncated file on the GPU node; the edge stops routing to them", async () => {
    const dir = join(temp, "corrupt");
    const cases = [
      {
        name: "flipped byte",
        problem: "A shelf holds 14 rows of 9 cans. How many cans are on the shelf?",
        next: "A shelf holds 21 rows of 8 cans. How many cans are on the shelf?",
        damage: (path: string) => {
          const bytes = readFileSync(path);
          const at = Math.floor(bytes.length / 2);
          bytes[at] = (bytes[at] as number) ^ 0x01;
          writeFileSync(path, bytes);
        },
      },
      {
        name: "truncated",
        problem: "A bus carries 31 people on each of 6 trips. How many people ride in total?",
        next: "A bus carries 40 people on each of 3 trips. How many people ride in total?",
        damage: (path: string) => truncateSync(path, Math.floor(readFileSync(path).length / 3)),
      },
    ];
    const ids: string[] = [];
    const problemIds: string[] = [];
    for (const c of cases) {
      const manifest = await gpu.client.deposit(`Problem:\n${c.problem}\n\nWorked solution: ...`);
      const normalizedText = normalizeProblem(c.problem);
      const { template, params } = problemTemplate(normalizedText);
      const { problem } = await registerProblem(edge.db, {
        normalizedText,
        fingerprint: await problemFingerprint(c.problem),
        template,
        params,
      });
      const reg = await api("POST", "/admin/blocks", { problemId: problem.id, sha256: manifest.sha256 });
      expect(reg.status).toBe(201);
      ids.push(manifest.sha256);
      problemIds.push(problem.id);
    }
    // A fresh node, so the blocks are read from disk (cold) rather than from a slot. Warm start off:
    // it would read them at start and find the damage first (test/warm-start.test.ts covers that);
    // this case is the graft's own read.
    await killHard(gpu);
    for (const [i, c] of cases.entries()) c.damage(join(dir, "blocks", `${ids[i]}.state`));
    const restarted = await startGpuChild({
      modelPath: model,
      dataDir: dir,
      secret: SECRET,
      port: gpu.port,
      env: { KVGRAFT_WARM_START: "off" },
    });
    nodes.push(restarted);
    gpu = restarted;

    for (const [i, c] of cases.entries()) {
      const id = ids[i] as string;
      const r = await api("POST", "/v1/solve", { problem: c.next, maxTokens: 2 });
      expect(r.status, c.name).toBe(409);
      expect(r.body.error.code, c.name).toBe("block_corrupt");
      // The GPU node moved the files aside and forgot the block.
      expect(
        (await gpu.client.listBlocks()).some((m) => m.sha256 === id),
        c.name,
      ).toBe(false);
      const quarantined = readdirSync(join(dir, "quarantine"));
      expect(
        quarantined.some((f) => f.startsWith(`${id}.state`)),
        c.name,
      ).toBe(true);
      expect(
        readdirSync(join(dir, "blocks")).some((f) => f.startsWith(id)),
        c.name,
      ).toBe(false);
      // The edge marked it: the library shows it quarantined and routing no longer picks it.
      const entry = await api("GET", `/v1/library/${problemIds[i]}`);
      expect(entry.body.blocks.find((b: { sha256: string }) => b.sha256 === id)?.state, c.name).toBe(
        "quarantined",
      );
      const again = await api("POST", "/v1/solve", { problem: c.next, mode: "library" });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ source: "none", route: { reason: "mode_library_only" } });
    }
  });
});

describe("disk full during a deposit", () => {
  const mnt = join(temp, "small-fs");
  let mounted: string | null = null;

  beforeAll(() => {
    execFileSync("mkdir", ["-p", mnt]);
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=400k", "tmpfs", mnt], { stdio: "pipe" });
      mounts.push(mnt);
      mounted = mnt;
    } catch (err) {
      mounted = null;
      process.stderr.write(
        `disk-full test skipped: mount -t tmpfs not permitted (${(err as Error).message})\n`,
      );
    }
  });

  it("answers a fast, clear 507, removes the temp file and keeps earlier blocks", async (ctx) => {
    if (!mounted) return ctx.skip("mount -t tmpfs is not permitted here (needs root / CAP_SYS_ADMIN)");
    const n = await node(mounted);
    const small = await n.client.deposit("Problem: 2 + 2. Answer: 4.");
    const before = await n.client.listBlocks();
    const t0 = performance.now();
    const err = await n.client.deposit(largeText("full", 120)).catch((e: unknown) => e);
    const ms = performance.now() - t0;
    expect(err).toBeInstanceOf(GpuError);
    expect((err as GpuError).status).toBe(507);
    expect(["disk_full", "storage_write_failed"]).toContain((err as GpuError).code);
    expect(ms).toBeLessThan(10_000);
    expect(readdirSync(join(mounted, "tmp"))).toEqual([]);
    expect(await n.client.listBlocks()).toEqual(before);
    expect((await n.client.verifyBlock(small.sha256)).ok).toBe(true);

    // An import whose chunks do not fit: ENOSPC from Node's fs is `disk_full`, nothing is kept.
    // A large block built on another node of the same model and engine, then imported here.
    const elsewhere = await node(join(temp, "source"));
    const built = await elsewhere.client.deposit(largeText("import", 120));
    await killHard(elsewhere);
    const src = {
      manifest: built,
      bytes: new Uint8Array(readFileSync(join(temp, "source", "blocks", `${built.sha256}.state`))),
    };
    expect(src.bytes.length).toBeGreaterThan(400_000);
    {
      const imported = await n.client
        .importBlock(src.manifest, src.bytes, { chunkBytes: 256 * 1024 })
        .catch((e: unknown) => e);
      expect(imported).toBeInstanceOf(GpuError);
      expect(
        (imported as GpuError).status,
        JSON.stringify([(imported as GpuError).code, (imported as GpuError).message]),
      ).toBe(507);
      expect((imported as GpuError).code).toBe("disk_full");
      expect(readdirSync(join(mounted, "imports"))).toEqual([]);
      expect(await n.client.listBlocks()).toEqual(before);
    }
    // The node is still fine: a small deposit fits and the first block still verifies.
    await n.client.deposit("Problem: 3 + 3. Answer: 6.");
    expect((await n.client.verifyBlock(small.sha256)).ok).toBe(true);
  });
});
