/**
 * Faults between the edge and the GPU node: a real edge talks to a real `kvgraft serve gpu`
 * child through a loopback TCP proxy written here (test/reliability/helpers.ts) that passes,
 * delays, black-holes or resets traffic. The node is also stopped, killed mid-request and
 * restarted. The edge must answer 502/503/504 within its timeout, never hang, and recover by
 * itself when the node is back; an import in flight when the node dies is all there or absent.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeServer, startEdgeServer } from "../../edge/runtime/node.js";
import { createGpuClient, GpuError } from "../../shared/gpu-client.js";
import { silentLogger } from "../../shared/http/logger.js";
import { errorBodySchema } from "../../shared/protocol.js";
import { seededRng } from "../../shared/random.js";
import { syntheticModel } from "../helpers/models.js";
import { type GpuChild, killHard, startGpuChild, type TcpProxy, tcpProxy, until } from "./helpers.js";
import { largeText } from "./kill-loop.js";

const SECRET = "faults-secret-0123456789abcdef";
const TIMEOUT_MS = 5_000;
/** Slack on top of the edge's timeout for the edge's own work and the test's scheduling. */
const SLACK_MS = 1_500;
const model = syntheticModel("tiny-llama");
const temp = mkdtempSync(join(tmpdir(), "kvgraft-rel-faults-"));
const dataDir = join(temp, "gpu");
let gpu: GpuChild;
let proxy: TcpProxy;
let edge: EdgeServer;
let key: string;
let problemN = 0;

beforeAll(async () => {
  gpu = await startGpuChild({ modelPath: model, dataDir, secret: SECRET, sandbox: true });
  proxy = await tcpProxy({ host: "127.0.0.1", port: gpu.port });
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(temp, "edge.db")}`,
      KVGRAFT_GPU_URL: proxy.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_GPU_TIMEOUT_MS: String(TIMEOUT_MS),
      KVGRAFT_GPU_HEALTH_TIMEOUT_MS: "500",
      KVGRAFT_SOLVE_MAX_TOKENS: "2",
      KVGRAFT_RATE_LIMIT: "100000",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  key = edge.generatedAdminKey as string;
  // Warm-up: the first generation loads what the later, timed ones rely on.
  await solve();
});

afterAll(async () => {
  await edge?.close();
  await proxy?.close();
  if (gpu) await killHard(gpu);
  rmSync(temp, { recursive: true, force: true });
});

/** A solve that needs the GPU node (no library entry: the plain model answers), timed. */
async function solve(): Promise<{
  status: number;
  code: string | null;
  ms: number;
  retryAfter: string | null;
}> {
  const t0 = performance.now();
  const res = await fetch(`${edge.url}/v1/solve`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ problem: `Say something about item ${problemN++}.`, maxTokens: 2 }),
    signal: AbortSignal.timeout(TIMEOUT_MS * 10),
  });
  const body = await res.json();
  const ms = performance.now() - t0;
  const code = res.ok ? null : errorBodySchema.parse(body).error.code;
  if (process.env.DEBUG_FAULTS) console.error(JSON.stringify(body));
  return { status: res.status, code, ms, retryAfter: res.headers.get("retry-after") };
}

async function health() {
  const res = await fetch(`${edge.url}/health`);
  return { status: res.status, body: (await res.json()) as { status: string; gpu: { status: string } } };
}

async function restartNode(): Promise<void> {
  gpu = await startGpuChild({ modelPath: model, dataDir, secret: SECRET, port: gpu.port, sandbox: true });
}

describe("nothing lost between the services", () => {
  it("a block deposited through the edge stays on the GPU node and is grafted", async () => {
    const res = await fetch(`${edge.url}/admin/solutions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        problem: "A crate holds 17 rows of 23 jars. How many jars are in the crate?",
        solution: "17 rows of 23 jars make 17 × 23 = 391 jars.",
        program: "print(391)\n",
        answer: "391",
      }),
    });
    expect(res.status).toBe(201);
    const blockId = ((await res.json()) as { block: { sha256: string } }).block.sha256;
    const direct = createGpuClient({ baseUrl: gpu.url, secret: SECRET, timeoutMs: 30_000 });
    expect((await direct.listBlocks()).map((m) => m.sha256)).toContain(blockId);
    // Give the edge's background work (heartbeats, rebalancing) time to run, then look again.
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await direct.listBlocks()).map((m) => m.sha256)).toContain(blockId);
    const graft = await fetch(`${edge.url}/v1/solve`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        problem: "A crate holds 12 rows of 30 jars. How many jars are in the crate?",
        maxTokens: 2,
      }),
    });
    const body = (await graft.json()) as { source?: string };
    expect(graft.status, JSON.stringify(body)).toBe(200);
    expect(body.source).toBe("graft");
  });
});

describe("GPU node slow, black-holed, stopped or restarted", () => {
  it("answers normally through the proxy, and a delay below the timeout only adds latency", async () => {
    const normal = await solve();
    expect(normal.status).toBe(200);
    process.stderr.write(`solve through the proxy: ${Math.round(normal.ms)} ms\n`);
    proxy.mode = { kind: "delay", ms: 300 };
    const slow = await solve();
    proxy.mode = { kind: "pass" };
    expect(slow.status).toBe(200);
    expect(slow.ms).toBeGreaterThanOrEqual(300);
  });

  it("a node slower than the timeout is a 504 gpu_timeout within the timeout", async () => {
    proxy.mode = { kind: "delay", ms: TIMEOUT_MS * 3 };
    const r = await solve();
    proxy.mode = { kind: "pass" };
    expect(r).toMatchObject({ status: 504, code: "gpu_timeout" });
    expect(r.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    expect(r.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
  });

  it("a black hole is a 504 within the timeout; health says degraded within its own timeout", async () => {
    proxy.dropAll(); // new connections only, so the black hole applies
    proxy.mode = { kind: "blackhole" };
    const r = await solve();
    expect(r).toMatchObject({ status: 504, code: "gpu_timeout" });
    expect(r.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    const t0 = performance.now();
    const h = await health();
    expect(performance.now() - t0).toBeLessThan(500 + SLACK_MS);
    expect(h.status).toBe(200);
    expect(h.body).toMatchObject({ status: "degraded", gpu: { status: "down" } });
    proxy.mode = { kind: "pass" };
    proxy.dropAll();
  });

  it("connections reset by the network are a fast 503 gpu_unavailable with Retry-After", async () => {
    proxy.dropAll();
    proxy.mode = { kind: "reset" };
    const r = await solve();
    proxy.mode = { kind: "pass" };
    expect(r).toMatchObject({ status: 503, code: "gpu_unavailable" });
    expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(r.ms).toBeLessThan(SLACK_MS);
  });

  it("a stopped node is a fast 503; the edge recovers by itself when the node returns", async () => {
    await killHard(gpu);
    proxy.dropAll();
    for (let i = 0; i < 3; i++) {
      const r = await solve();
      expect(r).toMatchObject({ status: 503, code: "gpu_unavailable" });
      expect(r.ms).toBeLessThan(SLACK_MS);
    }
    expect((await health()).body.gpu.status).toBe("down");
    await restartNode();
    // No restart of the edge, no manual step: the next requests succeed.
    await until(async () => (await solve()).status === 200, 10_000, "edge recovery");
    expect((await health()).body).toMatchObject({ status: "ok", gpu: { status: "ok" } });
  });

  it("a node killed mid-request gives a 502/503/504 within the timeout, then recovers", async () => {
    proxy.mode = { kind: "delay", ms: 400 };
    const pending = solve();
    await new Promise((r) => setTimeout(r, 150));
    await killHard(gpu);
    const r = await pending;
    proxy.mode = { kind: "pass" };
    expect([502, 503, 504]).toContain(r.status);
    expect(r.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    await restartNode();
    await until(async () => (await solve()).status === 200, 10_000, "edge recovery");
  });

  it("SIGTERM drains: the solve in flight completes, new work is a fast 503, then recovery", async () => {
    const inFlight = solve();
    await new Promise((r) => setTimeout(r, 300));
    gpu.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 100));
    const refused = await solve();
    expect(refused).toMatchObject({ status: 503, code: "gpu_unavailable" });
    expect(refused.ms).toBeLessThan(SLACK_MS);
    expect((await inFlight).status).toBe(200);
    expect((await gpu.exited).code).toBe(0);
    await restartNode();
    await until(async () => (await solve()).status === 200, 10_000, "edge recovery");
  });
});

describe("an import in flight when the node dies", () => {
  it("is either fully committed or absent after each kill, and never half-listed", async () => {
    const random = seededRng(`gpu-faults/${process.env.KVGRAFT_IMPORT_SEED ?? 7}`).next;
    const rounds = Number(process.env.KVGRAFT_IMPORT_KILLS ?? 3);
    // A block built here, kept on the side, then deleted: the node accepts it back as an import.
    const direct = () => createGpuClient({ baseUrl: gpu.url, secret: SECRET, timeoutMs: 30_000 });
    const built = await direct().deposit(largeText("import-source", 110));
    const bytes = new Uint8Array(readFileSync(join(dataDir, "blocks", `${built.sha256}.state`)));
    const outcomes: string[] = [];
    // How long a whole upload takes here, so the kills land anywhere in one (commit included).
    await direct().deleteBlock(built.sha256);
    const u0 = performance.now();
    await direct().importBlock(built, bytes, { chunkBytes: 32 * 1024 });
    const uploadMs = performance.now() - u0;
    for (let i = 0; i < rounds; i++) {
      if ((await direct().listBlocks()).some((m) => m.sha256 === built.sha256))
        await direct().deleteBlock(built.sha256);
      const t0 = performance.now();
      const upload = direct()
        .importBlock(built, bytes, { chunkBytes: 32 * 1024 })
        .then(
          () => "committed" as const,
          (e: unknown) => (e instanceof GpuError ? `refused ${e.code}` : "cut"),
        );
      await new Promise((r) => setTimeout(r, Math.floor(random() * uploadMs * 4)));
      await killHard(gpu);
      const answered = await upload;
      const killedAt = Math.round(performance.now() - t0);
      await restartNode();
      const listed = (await direct().listBlocks()).find((m) => m.sha256 === built.sha256);
      outcomes.push(`${answered} @${killedAt}ms -> ${listed ? "listed" : "absent"}`);
      // The restarted node removed what the killed upload had written, before any new import.
      await until(() => readdirSync(join(dataDir, "imports")).length === 0, 2_000, "imports/ swept at start");
      if (answered === "committed") expect(listed, outcomes.join("; ")).toBeDefined();
      if (listed) expect((await direct().verifyBlock(built.sha256)).ok).toBe(true);
      // Nothing half-written: blocks/ holds exactly the listed blocks' files.
      const files = readdirSync(join(dataDir, "blocks")).sort();
      const expected = (await direct().listBlocks()).flatMap((m) => [
        `${m.sha256}.json`,
        `${m.sha256}.state`,
      ]);
      expect(files, outcomes.join("; ")).toEqual(expected.sort());
    }
    // After a last, clean import the block is whole.
    if ((await direct().listBlocks()).some((m) => m.sha256 === built.sha256))
      await direct().deleteBlock(built.sha256);
    await direct().importBlock(built, bytes, { chunkBytes: 32 * 1024 });
    expect((await direct().verifyBlock(built.sha256)).ok).toBe(true);
    expect(readdirSync(join(dataDir, "imports"))).toEqual([]);
    process.stderr.write(
      `import kills (an upload takes ${Math.round(uploadMs)} ms): ${outcomes.join("; ")}\n`,
    );
  });
});
