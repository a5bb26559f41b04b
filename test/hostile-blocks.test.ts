/**
 * Crafted block files through the GPU node's import API (issue 23): each is refused with a clear
 * 4xx before llama.cpp reads it, the node stays up, and it then serves its genuine block exactly
 * as before. The manifests are honest about the crafted bytes (size and SHA-256), as an attacker
 * with an upload grant would make them. Also: a slot poisoned by a state that bypassed the
 * validator is retired and /health turns degraded while the other slot keeps serving.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAdaptorServer } from "@hono/node-server";
import type { Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEdgeServer } from "../edge/runtime/node.js";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { type IsolatedLoadRequest, isolatedLoadCheck } from "../gpu-node/blocks/import/isolated-load.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { loadSequenceState } from "../gpu-node/engine/state.js";
import { createGpuApp, type GpuApp } from "../gpu-node/server/app.js";
import { DomainError } from "../shared/errors.js";
import { createGpuClient, GpuError, type GpuNodeClient } from "../shared/gpu-client.js";
import { sha256Hex } from "../shared/hash.js";
import { silentLogger } from "../shared/http/logger.js";
import { type BlockManifest, healthSchema } from "../shared/protocol.js";
import { Xoshiro128 } from "../shared/random.js";
import { syntheticModel } from "./helpers/models.js";
import { fieldOffset, stateFields } from "./helpers/state-fields.js";

const SECRET = "test-secret-hostile-0123456789";
const FUZZ_CASES = 50;

let engine: Engine;
let blocks: BlockService;
let gpu: GpuApp;
let server: ReturnType<typeof createAdaptorServer>;
let client: GpuNodeClient;
let dataDir: string;
let kept: BlockManifest;
let keptAnswer: string;
/** A genuine block's bytes and manifest; the block itself is deleted so it can be re-imported. */
let genuine: { bytes: Buffer; manifest: BlockManifest };

beforeAll(async () => {
  engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 2, contextSize: 1024 });
  dataDir = mkdtempSync(join(tmpdir(), "kvgraft-hostile-"));
  blocks = await BlockService.open({ engine, dataDir, warmBudgetBytes: 0 });
  gpu = createGpuApp({
    blocks,
    secret: SECRET,
    fingerprints: { model: engine.modelFingerprint, engine: engine.engineFingerprint },
    dataDir,
    logger: silentLogger,
  });
  server = createAdaptorServer({ fetch: gpu.app.fetch });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  client = createGpuClient({ baseUrl: `http://127.0.0.1:${port}`, secret: SECRET, timeoutMs: 60_000 });
  kept = await client.deposit("A block that must keep serving while hostile files arrive. ".repeat(2));
  keptAnswer = (await client.graft({ blockId: kept.sha256, query: " Next:", maxTokens: 8 })).outputSha256;
  const source = await client.deposit("Problem: 6 times 7. Solution: 6 * 7 = 42. Answer: 42.");
  genuine = {
    bytes: readFileSync(join(dataDir, "blocks", `${source.sha256}.state`)),
    manifest: source,
  };
  await client.deleteBlock(source.sha256);
}, 120_000);

afterAll(async () => {
  await new Promise<void>((resolve) => {
    server?.close(() => resolve());
    if (server && "closeAllConnections" in server) server.closeAllConnections();
  });
  await gpu?.close();
  await blocks?.close();
  await engine?.dispose();
});

/** Imports `bytes` under the genuine manifest made honest about them, plus `lie`. */
async function importCrafted(bytes: Buffer, lie: Partial<BlockManifest> = {}) {
  const manifest = { ...genuine.manifest, sha256: await sha256Hex(bytes), sizeBytes: bytes.length, ...lie };
  return client.importBlock(manifest, new Uint8Array(bytes)).then(
    (m) => ({ ok: true as const, manifest: m }),
    (err: unknown) => {
      if (!(err instanceof GpuError)) throw err;
      return { ok: false as const, status: err.status, code: err.code, field: err.details?.field };
    },
  );
}

/** The genuine bytes with one u32 field overwritten. */
function withU32(name: string, value: number): Buffer {
  const b = Buffer.from(genuine.bytes);
  b.writeUInt32LE(value >>> 0, fieldOffset(b, name));
  return b;
}

async function expectServing(): Promise<void> {
  const health = healthSchema.parse(await (await fetch(`${clientUrl()}/health`)).json());
  expect(health.status).toBe("ok");
  const again = await client.graft({ blockId: kept.sha256, query: " Next:", maxTokens: 8 });
  expect(again.outputSha256).toBe(keptAnswer);
}

function clientUrl(): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("crafted block files through the import API", () => {
  it("refuses each crafted case of issue 23 with 422 block_invalid naming the field, and keeps serving", async () => {
    const fields = stateFields(genuine.bytes);
    const filled = fields.find(
      (f) => /^cache\[0\]\.stream\[\d+\]\.cells$/.test(f.name) && genuine.bytes.readUInt32LE(f.offset) > 0,
    );
    if (!filled) throw new Error("the genuine state has no cells");
    const tokenCount = genuine.manifest.tokenCount;
    const random = Buffer.alloc(genuine.bytes.length);
    for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 24;
    // Another model's state of another size: a gemma3 state (two caches, 1 + 5 layers).
    const other = await Engine.open({
      modelPath: syntheticModel("tiny-gemma3"),
      slots: 2,
      contextSize: 1024,
    });
    const foreignPath = join(dataDir, "foreign.state");
    try {
      const seq = other.slots[0] as (typeof other.slots)[0];
      const tokens = Array.from({ length: tokenCount }, (_, i) => (300 + i) as Token);
      await seq.evaluateWithoutGeneratingNewTokens(tokens);
      await seq.saveStateToFile(foreignPath);
    } finally {
      await other.dispose();
    }
    const foreign = readFileSync(foreignPath);
    const cases: [string, Buffer, Partial<BlockManifest>, string][] = [
      ["truncated by one byte", genuine.bytes.subarray(0, -1), {}, "cache[0].layer[3].v"],
      ["one byte too many", Buffer.concat([genuine.bytes, Buffer.alloc(1)]), {}, "end"],
      ["stream count 0xFFFFFFFF", withU32("cache[0].streams", 0xffffffff), {}, "cache[0].streams"],
      ["cell count 0xFFFFFFFF", withU32(filled.name, 0xffffffff), {}, filled.name],
      ["first cell at INT32_MAX", withU32("cache[0].cell[0].pos", 0x7fffffff), {}, "cache[0].cell[0].pos"],
      ["random bytes", random, {}, "magic"],
      ["impossible token count", withU32("tokenCount", 0x7fffffff), {}, "tokenCount"],
      ["another model's state", foreign, { tokensSha256: genuine.manifest.tokensSha256 }, "tokens"],
      ["manifest lies about the token count", genuine.bytes, { tokenCount: tokenCount - 1 }, "tokenCount"],
      ["manifest lies about the tokens", genuine.bytes, { tokensSha256: "0".repeat(64) }, "tokens"],
    ];
    for (const [label, bytes, lie, field] of cases) {
      const r = await importCrafted(bytes, lie);
      expect({ label, ...r }).toEqual({ label, ok: false, status: 422, code: "block_invalid", field });
    }
    await expectServing();
    // The foreign state with tokens that hash right still fails on its shape.
    const sameTokens = Buffer.from(foreign);
    genuine.bytes.copy(sameTokens, 8, 8, 12 + 4 * tokenCount);
    const r = await importCrafted(sameTokens);
    expect(r).toMatchObject({ ok: false, status: 422, code: "block_invalid", field: "cache[0].layers" });
    // The genuine file still imports and verifies.
    const back = await importCrafted(genuine.bytes);
    expect(back).toMatchObject({ ok: true, manifest: { sha256: genuine.manifest.sha256 } });
    await client.deleteBlock(genuine.manifest.sha256);
  }, 120_000);

  it(`survives ${FUZZ_CASES} field-by-field mutations of a valid state with 4xx answers only`, async () => {
    const fields = stateFields(genuine.bytes);
    // Every structural field, and a sample of the per-token and per-cell ones.
    const targets = fields.filter(
      (f, i) => !/\]\.(pos|seqIdCount|seqId)$|^token\[/.test(f.name) || i % 17 === 0,
    );
    const rng = new Xoshiro128("hostile-blocks/fields");
    const next = () => rng.next();
    const outcomes = new Map<string, number>();
    for (let i = 0; i < FUZZ_CASES; i++) {
      const f = targets[next() % targets.length] as (typeof targets)[0];
      const b = Buffer.from(genuine.bytes);
      const orig = b.readUInt32LE(f.offset);
      const values = [0, 1, 0xffffffff, 0x7fffffff, 0x80000000, orig + 1, orig - 1, next()];
      const v = values[next() % values.length] as number;
      if (v === orig) continue;
      b.writeUInt32LE(v >>> 0, f.offset);
      const r = await importCrafted(i % 10 === 9 ? b.subarray(0, next() % b.length) : b);
      if (r.ok) {
        // Only a change llama.cpp ignores (the saved sequence id) may load and verify.
        expect(f.name).toMatch(/seqId$/);
        await client.deleteBlock(r.manifest.sha256);
      } else expect(r.status).toBeGreaterThanOrEqual(400);
      if (!r.ok) expect(r.status).toBeLessThan(500);
      const key = r.ok ? "imported" : `${r.status} ${r.code}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    expect(outcomes.get("422 block_invalid")).toBeGreaterThan(FUZZ_CASES / 2);
    await expectServing();
  }, 180_000);

  it("refuses an import whose isolated first load dies or passes its memory limit, and keeps serving", async () => {
    const path = join(dataDir, "for-the-child.state");
    const request = (statePath: string): IsolatedLoadRequest => ({
      binary: "cpu",
      statePath,
      modelPath: engine.options.modelPath,
      slots: 2,
      contextSize: engine.options.contextSize,
      batchSize: engine.options.batchSize,
      flashAttention: engine.options.flashAttention,
      kvType: "F16",
      swaFullCache: engine.options.swaFullCache,
      tokenCount: genuine.manifest.tokenCount,
    });
    const refusal = async (p: Promise<void>) => {
      const err = await p.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DomainError);
      expect((err as DomainError).status).toBe(422);
      expect((err as DomainError).code).toBe("block_invalid");
      return (err as DomainError).message;
    };
    const limits = { memoryBytes: 2 ** 30, timeoutMs: 60_000 };
    // The genuine file loads in the child.
    writeFileSync(path, genuine.bytes);
    await isolatedLoadCheck(request(path), limits);
    // Past the validator, a file one byte short aborts llama.cpp: only the child dies.
    writeFileSync(path, genuine.bytes.subarray(0, -1));
    expect(await refusal(isolatedLoadCheck(request(path), limits))).toMatch(
      /llama\.cpp died \(SIGABRT\)|exit/,
    );
    // A child over its memory limit is killed.
    writeFileSync(path, genuine.bytes);
    expect(await refusal(isolatedLoadCheck(request(path), { ...limits, memoryBytes: 32 * 2 ** 20 }))).toMatch(
      /killed because its memory passed/,
    );
    await expectServing();
  }, 120_000);

  it("retires a slot a bypassed load poisoned, reports degraded, and serves from the other", async () => {
    const poisoned = join(dataDir, "poisoned.state");
    writeFileSync(poisoned, withU32("cache[0].cell[0].pos", 0x7fffffff));
    const lease = await blocks.pool.acquire(null);
    // Straight to llama.cpp, past the validator: it accepts the cell at INT32_MAX.
    await loadSequenceState(lease.slot.sequence, poisoned).catch(() => undefined);
    await blocks.pool.releaseWiped(lease);
    expect(lease.slot.retired).toBe(true);
    const res = await fetch(`${clientUrl()}/health`);
    const health = healthSchema.parse(await res.json());
    expect(health.status).toBe("degraded");
    expect(health.slots).toMatchObject({ total: 2, retired: 1 });
    for (let i = 0; i < 3; i++) {
      const again = await client.graft({ blockId: kept.sha256, query: " Next:", maxTokens: 8 });
      expect(again.outputSha256).toBe(keptAnswer);
    }
    // An edge in front of the node reports it degraded too.
    const edge = await startEdgeServer({
      env: {
        LIBSQL_URL: `file:${join(dataDir, "edge.db")}`,
        KVGRAFT_GPU_SECRET: SECRET,
        KVGRAFT_GPU_URL: clientUrl(),
      },
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger,
    });
    try {
      const edgeHealth = (await (await fetch(`${edge.url}/health`)).json()) as {
        status: string;
        gpu: { status: string; slots?: { retired?: number } };
      };
      expect(edgeHealth).toMatchObject({
        status: "degraded",
        gpu: { status: "degraded", slots: { retired: 1 } },
      });
    } finally {
      await edge.close();
    }
  }, 60_000);
});
