/**
 * The manifest fields of an imported block that its state file does not prove (issue 35, item 5):
 * a real block deposited on a tiny generated model, deleted, then imported back through the GPU
 * node's import API under manifests that lie about one field each. The node refuses each lie,
 * naming the field, and stores nothing; the true manifest imports and is stored as it was made.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAdaptorServer } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { createGpuApp, type GpuApp } from "../gpu-node/server/app.js";
import { createGpuClient, GpuError, type GpuNodeClient } from "../shared/gpu-client.js";
import { sha256Hex } from "../shared/hash.js";
import { silentLogger } from "../shared/http/logger.js";
import type { BlockManifest } from "../shared/protocol.js";
import { syntheticModel } from "./helpers/models.js";

const SECRET = "test-secret-manifest-0123456789";
const TEXT = "Problem: 6 times 7. Solution: 6 * 7 = 42. Answer: 42.";

let engine: Engine;
let blocks: BlockService;
let gpu: GpuApp;
let server: ReturnType<typeof createAdaptorServer>;
let client: GpuNodeClient;
let genuine: { bytes: Uint8Array; manifest: BlockManifest };

beforeAll(async () => {
  engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 2, contextSize: 1024 });
  const dataDir = mkdtempSync(join(tmpdir(), "kvgraft-manifest-"));
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
  // The deposit's answer is the manifest and whether the node keeps it in a bucket.
  const { durable: _durable, ...made } = await client.deposit(TEXT);
  genuine = {
    bytes: new Uint8Array(readFileSync(join(dataDir, "blocks", `${made.sha256}.state`))),
    manifest: made,
  };
  await client.deleteBlock(made.sha256);
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

/** Imports the genuine bytes under `manifest`: the stored manifest, or the refusal. */
function importAs(manifest: BlockManifest) {
  return client.importBlock(manifest, genuine.bytes).then(
    (m) => ({ ok: true as const, manifest: m }),
    (err: unknown) => {
      if (!(err instanceof GpuError)) throw err;
      return { ok: false as const, status: err.status, code: err.code, field: err.details?.field };
    },
  );
}

describe("an imported block's manifest fields", () => {
  it("refuses each field that differs from what the node computes, naming it, and stores nothing", async () => {
    const m = genuine.manifest;
    const cases: [string, BlockManifest, { status: number; code: string; field: string }][] = [
      [
        "engine.context changed, engine.id kept",
        {
          ...m,
          engine: {
            ...m.engine,
            context: { ...m.engine.context, batchSize: m.engine.context.batchSize * 2 },
          },
        },
        { status: 409, code: "engine_mismatch", field: "engine.context.batchSize" },
      ],
      [
        "engine.backend changed",
        { ...m, engine: { ...m.engine, backend: m.engine.backend === "cpu" ? "cuda" : "cpu" } },
        { status: 409, code: "engine_mismatch", field: "engine.backend" },
      ],
      [
        "model.name changed, model.sha256 kept",
        { ...m, model: { ...m.model, name: "another model" } },
        { status: 409, code: "model_mismatch", field: "model.name" },
      ],
      [
        "a false textSha256",
        { ...m, textSha256: await sha256Hex("Problem: 6 times 7. Answer: 41.") },
        { status: 422, code: "manifest_mismatch", field: "textSha256" },
      ],
      [
        "createdAt not a time",
        { ...m, createdAt: "yesterday" },
        { status: 422, code: "manifest_mismatch", field: "createdAt" },
      ],
      [
        "createdAt a year ahead",
        { ...m, createdAt: new Date(Date.now() + 365 * 86_400_000).toISOString() },
        { status: 422, code: "manifest_mismatch", field: "createdAt" },
      ],
    ];
    for (const [what, manifest, expected] of cases) {
      const result = await importAs(manifest);
      expect(result, what).toEqual({ ok: false, ...expected });
      expect(
        (await client.listBlocks()).map((b) => b.sha256),
        what,
      ).not.toContain(m.sha256);
    }
  }, 120_000);

  it("stores the true manifest as it was made, with the chunk hashes it computes", async () => {
    const m = genuine.manifest;
    // Chunk hashes are not trusted either: the node computes its own when it stores the file.
    const result = await importAs({ ...m, chunks: { bytes: 1024, sha256: ["0".repeat(64)] } });
    expect(result.ok).toBe(true);
    expect(await client.getBlock(m.sha256)).toEqual(m);
    expect((await client.verifyBlock(m.sha256)).ok).toBe(true);
  }, 120_000);
});
