/**
 * On kvgraft's engine build, a block fetched from the bucket (s3rver on loopback) goes into the
 * pinned warm arena while it downloads and into the disk cache: the graft that asked for it loads
 * from memory ("warm"), byte-exact with a local restore, without waiting for the disk copy, which
 * is committed behind it (a failure there loses only that copy). Bytes that fail their hashes
 * never reach the arena. Skipped, saying why, where the build is absent; CI builds it first.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { BlockBucket, blockKeys } from "../gpu-node/blocks/bucket/bucket.js";
import type { OpenDestination } from "../gpu-node/blocks/bucket/bucket-fetch.js";
import { MemoryPath } from "../gpu-node/blocks/state-path/memory-path.js";
import { hashFileWithChunks } from "../gpu-node/blocks/store/file-hash.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { DomainError } from "../shared/errors.js";
import type { BlockManifest } from "../shared/protocol.js";
import { randomBlockFile } from "./helpers/block-files.js";
import { noEngineBuildReason } from "./helpers/engine-build.js";
import { syntheticModel } from "./helpers/models.js";
import { startS3Server, type TestBucketServer } from "./helpers/s3-server.js";
import { skipEachWith } from "./helpers/skip.js";

const NO_ENGINE = await noEngineBuildReason();

const QUERY = " What follows from this? Answer:";

describe("engine build: a bucket fetch fills the warm arena", () => {
  skipEachWith(NO_ENGINE, "bucket-warm.test");
  const roots: string[] = [];
  let s3: TestBucketServer;
  let engine: Engine;
  beforeAll(async () => {
    if (NO_ENGINE) return;
    s3 = await startS3Server();
    engine = await Engine.open({
      modelPath: syntheticModel("tiny-llama"),
      slots: 2,
      contextSize: 1024,
      binary: "lastBuild",
    });
  });
  afterAll(async () => {
    await engine?.dispose();
    await s3?.stop();
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  });
  const fresh = (label: string) => {
    const dir = mkdtempSync(join(tmpdir(), `kvgraft-bucket-warm-${label}-`));
    roots.push(dir);
    return dir;
  };
  const openService = (bucket: BlockBucket) =>
    BlockService.open({ engine, dataDir: fresh("data"), warmBudgetBytes: 256 * 2 ** 20, bucket });
  const text = (label: string) =>
    Array.from({ length: 14 }, (_, k) => `${label} fact${k} alpha beta`).join(" ");

  it.each([1, 3])(
    "the arena hashes the bytes in place as %i ranged GETs fill it: many chunks and pieces, byte-exact; a changed byte or rewritten chunk hashes are refused",
    async (parallel) => {
      const CHUNK = 64 * 1024;
      const bucket = new BlockBucket({ ...s3.config, fetchParallel: parallel });
      const memory = MemoryPath.open(engine.nativeApi, 4 * 2 ** 20) as MemoryPath;
      const { path, manifest } = await randomBlockFile(
        fresh("src"),
        9 * CHUNK + 7,
        `arena-${parallel}`,
        CHUNK,
      );
      await bucket.upload(manifest, path);
      const staged = memory.stageFetch(manifest.sizeBytes);
      await bucket.download(manifest, staged?.destination as OpenDestination);
      staged?.keep(manifest.sha256);
      const lease = memory.tier.acquire(manifest.sha256);
      const { arena, offset, length } = lease?.range ?? expect.fail("not kept");
      expect(memory.api.copyOut(arena, offset, length).equals(readFileSync(path))).toBe(true);
      lease?.release();

      // One byte changed in chunk 4: that chunk differs, and nothing is kept.
      const altered = Buffer.from(readFileSync(path));
      altered.writeUInt8(altered.readUInt8(4 * CHUNK + 9) ^ 1, 4 * CHUNK + 9);
      const key = `altered/${parallel}.state`;
      const put = await s3.raw.fetch(`${s3.config.url}/${key}`, { method: "PUT", body: altered });
      expect(put.status).toBe(200);
      const refusal = (m: BlockManifest) => {
        const room = memory.stageFetch(m.sizeBytes);
        return bucket.download(m, room?.destination as OpenDestination, { key }).then(
          () => null,
          (e: unknown) => {
            room?.drop();
            return (e as DomainError).message;
          },
        );
      };
      expect(await refusal(manifest)).toContain("chunk 4 differs");
      // Chunk hashes rewritten to match the changed bytes: only the whole state's SHA-256 tells.
      const alteredPath = join(fresh("altered"), "state");
      writeFileSync(alteredPath, altered);
      const chunks = (await hashFileWithChunks(alteredPath, CHUNK)).chunks;
      expect(await refusal({ ...manifest, chunks: { bytes: CHUNK, sha256: chunks } })).toContain(
        "SHA-256 differs",
      );
      // The refused fetches' room was dropped: only the first block is in the arena.
      expect(memory.tier.blocks()).toEqual([manifest.sha256]);
    },
  );

  it.each([
    ["untagged: pieces in offset order, the whole hash following", false],
    ["tagged: each chunk's pieces in turn, chunk hashes only", true],
  ])(
    "chunks that span several 8 MiB pieces fill the arena byte-exact (%s); a damaged later piece is refused",
    async (_, trusted) => {
      // 2 chunks of 20 MiB (pieces of 8, 8, 4 MiB) and one of 1 MiB + 3 bytes.
      const CHUNK = 20 * 2 ** 20;
      const bucket = new BlockBucket({ ...s3.config, fetchParallel: 3 });
      const memory = MemoryPath.open(engine.nativeApi, 96 * 2 ** 20) as MemoryPath;
      const { path, manifest } = await randomBlockFile(
        fresh("src"),
        2 * CHUNK + 2 ** 20 + 3,
        `span-${trusted}`,
        CHUNK,
      );
      const key = `span/${trusted}.state`;
      const put = async (bytes: Buffer) =>
        expect((await s3.raw.fetch(`${s3.config.url}/${key}`, { method: "PUT", body: bytes })).status).toBe(
          200,
        );
      await put(readFileSync(path));
      const staged = memory.stageFetch(manifest.sizeBytes);
      const fetched = await bucket.download(manifest, staged?.destination as OpenDestination, {
        key,
        chunksTrusted: trusted,
      });
      expect(fetched.wholeChecked).toBe(!trusted);
      staged?.keep(manifest.sha256);
      const lease = memory.tier.acquire(manifest.sha256);
      const { arena, offset, length } = lease?.range ?? expect.fail("not kept");
      expect(memory.api.copyOut(arena, offset, length).equals(readFileSync(path))).toBe(true);
      lease?.release();
      // One byte changed in the second piece of chunk 1.
      const damaged = Buffer.from(readFileSync(path));
      const at = CHUNK + 8 * 2 ** 20 + 77;
      damaged.writeUInt8(damaged.readUInt8(at) ^ 1, at);
      await put(damaged);
      const room = memory.stageFetch(manifest.sizeBytes);
      await expect(
        bucket.download(manifest, room?.destination as OpenDestination, { key, chunksTrusted: trusted }),
      ).rejects.toThrow(/chunk 1 differs/);
      room?.drop();
      expect(memory.tier.blocks()).toEqual([manifest.sha256]);
    },
  );

  it("a graft of a block not on the node loads it from the arena the fetch filled", async () => {
    const bucket = new BlockBucket({ ...s3.config, fetchParallel: 3 });
    const depositor = await openService(bucket);
    const manifest = await depositor.deposit(text("warm-fetch"));
    depositor.pool.evict(manifest.sha256);
    await depositor.dropRamCopy(manifest.sha256);
    const local = await depositor.graft(manifest.sha256, QUERY, { maxTokens: 8 });
    expect(local.tier).toBe("cold");
    await depositor.close();

    for (const s of engine.slots) await s.clearHistory();
    const other = await openService(bucket);
    expect(other.state.arena).not.toBeNull();
    const fetched = await other.graft(manifest.sha256, QUERY, { maxTokens: 8, verifyProbe: true });
    expect(fetched.tier).toBe("warm");
    expect(fetched.outputSha256).toBe(local.outputSha256);
    expect(other.disk.stats.fetches).toBe(1);
    // Committed to the disk cache as well (behind the graft), byte-exact.
    await other.disk.settled();
    expect(readFileSync(other.store.statePath(manifest.sha256))).toEqual(
      readFileSync(depositor.store.statePath(manifest.sha256)),
    );
    await other.close();
  });

  it("an altered object is refused and leaves nothing in the arena or on disk", async () => {
    const bucket = new BlockBucket(s3.config);
    const depositor = await openService(bucket);
    const manifest = await depositor.deposit(text("warm-altered"));
    const bytes = Buffer.from(readFileSync(depositor.store.statePath(manifest.sha256)));
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 5) ^ 1, bytes.length - 5);
    const put = await s3.raw.fetch(`${s3.config.url}/${blockKeys(manifest.sha256).state}`, {
      method: "PUT",
      body: bytes,
    });
    expect(put.status).toBe(200);
    await depositor.close();

    for (const s of engine.slots) await s.clearHistory();
    const other = await openService(bucket);
    const err = await other.graft(manifest.sha256, QUERY, { maxTokens: 8 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe("bucket_block_corrupt");
    expect(other.state.arena?.tier.blocks()).toEqual([]);
    expect(other.state.arena?.tier.usedBytes).toBe(0);
    expect(other.list()).toEqual([]);
    await other.close();
  });

  it("a fetched block is served before its disk copy exists; two grafts share one fetch; a failed disk copy loses only itself", async () => {
    const bucket = new BlockBucket(s3.config);
    const depositor = await openService(bucket);
    const manifest = await depositor.deposit(text("warm-persist"));
    const original = readFileSync(depositor.store.statePath(manifest.sha256));
    await depositor.close();

    for (const s of engine.slots) await s.clearHistory();
    const dataDir = fresh("data");
    const other = await BlockService.open({ engine, dataDir, warmBudgetBytes: 256 * 2 ** 20, bucket });
    // A directory where the state file goes: the rename that commits the fetched file fails, as
    // a failing disk would. Before the change the graft waited for that commit and failed with it.
    const statePath = other.store.statePath(manifest.sha256);
    mkdirSync(statePath);
    const [first, second] = await Promise.all([
      other.graft(manifest.sha256, QUERY, { maxTokens: 8 }),
      other.graft(manifest.sha256, QUERY, { maxTokens: 8 }),
    ]);
    expect(first.tier).toBe("warm");
    expect(second.outputSha256).toBe(first.outputSha256);
    expect(other.disk.stats.fetches).toBe(1);
    await other.disk.settled();
    // Only the disk copy was lost: nothing listed, nothing left in the arena or the temp folder.
    expect(other.disk.stats.persistFailures).toBe(1);
    expect(other.list()).toEqual([]);
    expect(other.state.arena?.tier.blocks()).toEqual([]);
    expect(readdirSync(join(dataDir, "tmp"))).toEqual([]);

    // With the disk healthy again the next graft fetches it again, and the file is committed.
    rmSync(statePath, { recursive: true });
    other.pool.evict(manifest.sha256); // the slots that served it would answer "hot"
    const again = await other.graft(manifest.sha256, QUERY, { maxTokens: 8 });
    expect(again.tier).toBe("warm");
    expect(again.outputSha256).toBe(first.outputSha256);
    expect(other.disk.stats.fetches).toBe(2);
    await other.close(); // waits for the commit
    expect(readFileSync(statePath)).toEqual(original);
  });

  it("a manifest with the node's tag is served once its chunks matched, the whole hash checked behind; without the tag rewritten chunk hashes are refused first", async () => {
    const secrets = { manifestSecrets: ["warm-tag-node-secret-01"] };
    const bucket = new BlockBucket({ ...s3.config, ...secrets });
    const depositor = await openService(bucket);
    const manifest = await depositor.deposit(text("warm-tagged"));
    const original = readFileSync(depositor.store.statePath(manifest.sha256));
    await depositor.close();

    for (const s of engine.slots) await s.clearHistory();
    const other = await openService(bucket);
    const served = await other.graft(manifest.sha256, QUERY, { maxTokens: 8, verifyProbe: true });
    expect(served.tier).toBe("warm");
    expect(other.disk.lastFetch?.wholeChecked).toBe(false);
    await other.disk.settled();
    expect(other.disk.stats.persistFailures).toBe(0);
    expect(readFileSync(other.store.statePath(manifest.sha256))).toEqual(original);
    await other.close();

    // One byte changed and the chunk hashes rewritten to match, by someone without the secret:
    // the manifest has no valid tag, so the whole state is hashed before anything is served.
    const altered = Buffer.from(original);
    const at = Math.floor(altered.length / 2); // in the KV data: llama.cpp itself would load it
    altered.writeUInt8(altered.readUInt8(at) ^ 1, at);
    const alteredPath = join(fresh("altered"), "state");
    writeFileSync(alteredPath, altered);
    const chunks = (await hashFileWithChunks(alteredPath, manifest.chunks?.bytes)).chunks;
    const forged = { ...manifest, chunks: { bytes: manifest.chunks?.bytes as number, sha256: chunks } };
    for (const [key, body] of [
      [blockKeys(manifest.sha256).state, altered],
      [blockKeys(manifest.sha256).manifest, Buffer.from(JSON.stringify(forged))],
    ] as const) {
      const put = await s3.raw.fetch(`${s3.config.url}/${key}`, { method: "PUT", body });
      expect(put.status).toBe(200);
    }
    for (const s of engine.slots) await s.clearHistory();
    const third = await openService(bucket);
    const err = await third.graft(manifest.sha256, QUERY, { maxTokens: 8 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as DomainError).code).toBe("bucket_block_corrupt");
    expect((err as DomainError).message).toContain("SHA-256 differs");
    expect(third.state.arena?.tier.blocks()).toEqual([]);

    // The same forged manifest tagged under the secret (only a node holding it could): served on
    // its chunk hashes, then the check before the disk copy finds the name differs, and the node
    // keeps nothing of it.
    await bucket.delete([blockKeys(manifest.sha256).manifest]);
    await bucket.upload(forged, alteredPath);
    for (const s of engine.slots) await s.clearHistory();
    const fourth = await openService(bucket);
    const taken = await fourth.graft(manifest.sha256, QUERY, { maxTokens: 8 });
    expect(taken.tier).toBe("warm");
    await fourth.disk.settled();
    expect(fourth.disk.stats.persistFailures).toBe(1);
    expect(fourth.list()).toEqual([]);
    expect(fourth.state.arena?.tier.blocks()).toEqual([]);
    await fourth.close();
    await third.close();
  });
});
