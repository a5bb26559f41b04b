/**
 * Grafts through the bucket on real llama.cpp inference (a generated tiny model) and a real
 * S3-compatible server (s3rver on loopback): a deposit is uploaded before it is answered; a node
 * without the block fetches it and serves the same output as from the local copy; with the
 * bucket unreachable, cached blocks still graft and deposits fail with nothing left to register.
 * On this file path (npm binaries) the graft loads the committed file, so a fetch whose disk copy
 * fails fails the graft, leaving nothing behind (the engine build serves it: bucket-warm.test.ts).
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { BlockBucket } from "../gpu-node/blocks/bucket/bucket.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { DomainError } from "../shared/errors.js";
import { syntheticModel } from "./helpers/models.js";
import { startS3Server, type TestBucketServer } from "./helpers/s3-server.js";

const QUERY = " What follows from this? Answer:";
const roots: string[] = [];
let s3: TestBucketServer;
let engine: Engine;
beforeAll(async () => {
  s3 = await startS3Server();
  engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 2, contextSize: 1024 });
});
afterAll(async () => {
  await engine?.dispose();
  await s3?.stop();
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function freshDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `kvgraft-bucket-graft-${label}-`));
  roots.push(dir);
  return dir;
}

function blockText(label: string): string {
  return Array.from({ length: 14 }, (_, k) => `${label} fact${k} alpha beta`).join(" ");
}

/** A block service on `dataDir` (default a fresh one) over `bucket`, its warm tier in a temp dir. */
function openService(bucket: BlockBucket, dataDir = freshDir("data")): Promise<BlockService> {
  return BlockService.open({ engine, dataDir, warmDir: join(freshDir("warm"), "w"), bucket });
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("grafts through the bucket (tiny-llama, s3rver)", () => {
  it("deposit uploads; after the local copy is gone a graft fetches it and answers byte-exact", async () => {
    const bucket = new BlockBucket(s3.config);
    const depositor = await openService(bucket);
    const manifest = await depositor.deposit(blockText("round-trip"));
    expect(await bucket.has(manifest.sha256)).toBe(true);
    expect(depositor.disk.stats.uploads).toBe(1);
    depositor.pool.evict(manifest.sha256);
    await depositor.dropRamCopy(manifest.sha256);
    const local = await depositor.graft(manifest.sha256, QUERY, { maxTokens: 8 });
    expect(local.tier).toBe("cold");
    await depositor.delete(manifest.sha256);
    await depositor.close();

    // Another node (a fresh store) has never seen the block.
    for (const s of engine.slots) await s.clearHistory();
    const other = await openService(bucket);
    expect(other.list()).toEqual([]);
    const fetched = await other.graft(manifest.sha256, QUERY, { maxTokens: 8, verifyProbe: true });
    expect(fetched.outputSha256).toBe(local.outputSha256);
    expect(fetched.text).toBe(local.text);
    expect(other.disk.stats.fetches).toBe(1);
    expect(other.get(manifest.sha256)).toEqual(manifest);
    await other.close();
  });

  it("bucket unreachable: a cached block still grafts; a deposit fails with 503 bucket_unavailable", async () => {
    const dataDir = freshDir("data");
    const up = await openService(new BlockBucket(s3.config), dataDir);
    const cached = await up.deposit(blockText("cached"));
    await up.close();

    for (const s of engine.slots) await s.clearHistory();
    const down = new BlockBucket({
      ...s3.config,
      url: `http://127.0.0.1:${await closedPort()}/kvgraft-blocks`,
    });
    const svc = await openService(down, dataDir);
    const answer = await svc.graft(cached.sha256, QUERY, { maxTokens: 8 });
    expect(answer.blockSha256).toBe(cached.sha256);
    const err = await svc.deposit(blockText("while-down")).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DomainError);
    expect({ status: (err as DomainError).status, code: (err as DomainError).code }).toEqual({
      status: 503,
      code: "bucket_unavailable",
    });
    expect(svc.disk.stats.uploads).toBe(0);
    await svc.close();
  });

  it("file path: a fetch whose disk copy fails fails the graft and leaves nothing behind", async () => {
    const bucket = new BlockBucket(s3.config);
    const depositor = await openService(bucket);
    const manifest = await depositor.deposit(blockText("disk-fails"));
    await depositor.close();

    for (const s of engine.slots) await s.clearHistory();
    const dataDir = freshDir("data");
    const other = await openService(bucket, dataDir);
    // A directory where the state file goes: the rename that commits the fetched file fails.
    mkdirSync(other.store.statePath(manifest.sha256));
    await expect(other.graft(manifest.sha256, QUERY, { maxTokens: 8 })).rejects.toThrow(/EISDIR/);
    expect(other.list()).toEqual([]);
    expect(readdirSync(join(dataDir, "tmp"))).toEqual([]);
    expect(await bucket.has(manifest.sha256)).toBe(true);
    await other.close();
  });
});
