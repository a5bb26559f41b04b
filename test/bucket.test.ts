/**
 * The bucket tier against a real S3-compatible server (s3rver on loopback) with real files:
 * upload and fetch byte-exact, chunk hashes checked behind the downloads (altered or truncated
 * objects refused), manifest last (a killed upload leaves no block), the bucket unreachable,
 * one fetch for concurrent requests, and the disk budget's LRU that evicts only durable blocks.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockBucket, blockKeys } from "../gpu-node/blocks/bucket/bucket.js";
import { DiskCache } from "../gpu-node/blocks/bucket/disk-cache.js";
import { fileDestination } from "../gpu-node/blocks/bucket/fetch-file-destination.js";
import { BlockStore } from "../gpu-node/blocks/store/block-store.js";
import { hashFileWithChunks } from "../gpu-node/blocks/store/file-hash.js";
import { bucketConfig, readGpuEnv } from "../gpu-node/config.js";
import { presignPut, uploadKeys } from "../shared/bucket-keys.js";
import { DomainError } from "../shared/errors.js";
import { randomBlockFile } from "./helpers/block-files.js";
import { startS3Server, type TestBucketServer } from "./helpers/s3-server.js";

const ROOT = join(import.meta.dirname, "..");
const CHUNK = 64 * 1024;
const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

const roots: string[] = [];
let s3: TestBucketServer;
let bucket: BlockBucket;
beforeAll(async () => {
  s3 = await startS3Server();
  bucket = new BlockBucket(s3.config);
});
afterAll(async () => {
  await s3?.stop();
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function freshDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `kvgraft-bucket-${label}-`));
  roots.push(dir);
  return dir;
}

/** A block state file of `size` random bytes and its manifest, with 64 KiB chunk hashes. */
const blockFile = (size: number, label: string) => randomBlockFile(freshDir("src"), size, label, CHUNK);

/** A disk cache over a fresh store on the test bucket. */
async function freshCache(
  target: BlockBucket = bucket,
  diskBudgetBytes?: number,
): Promise<{ store: BlockStore; cache: DiskCache }> {
  const { store } = await BlockStore.open(freshDir("node"));
  return {
    store,
    cache: new DiskCache(store, { bucket: target, diskBudgetBytes }, (id) => store.delete(id)),
  };
}

async function expectDomainError(promise: Promise<unknown>, status: number, code: string): Promise<void> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DomainError);
  expect({ status: (err as DomainError).status, code: (err as DomainError).code }).toEqual({ status, code });
}

/** Overwrites an object of the bucket directly (a damaged or tampered copy). */
async function putRaw(key: string, body: Uint8Array): Promise<void> {
  const res = await s3.raw.fetch(`${s3.config.url}/${key}`, { method: "PUT", body });
  expect(res.status).toBe(200);
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("block bucket", () => {
  it("uploads a block (state, then manifest) and fetches it byte-exact into another node's store", async () => {
    const { path, manifest } = await blockFile(5 * CHUNK + 123, "round-trip");
    expect(await bucket.has(manifest.sha256)).toBe(false);
    await bucket.upload(manifest, path);
    expect(await bucket.has(manifest.sha256)).toBe(true);
    expect(await bucket.manifest(manifest.sha256)).toEqual(manifest);

    const { store, cache } = await freshCache();
    const fetched = await cache.local(manifest.sha256);
    expect(fetched).toEqual(manifest);
    expect(store.has(manifest.sha256)).toBe(true);
    expect(readFileSync(await store.checkedStatePath(manifest.sha256))).toEqual(readFileSync(path));
    expect(cache.stats.fetches).toBe(1);
    // On disk now: the next use reads it locally.
    await cache.local(manifest.sha256);
    expect(cache.stats.fetches).toBe(1);
    expect(readdirSync(store.tmpDir)).toEqual([]);
  });

  it("answers 404 block_not_found for a block neither the node nor the bucket has", async () => {
    const { cache } = await freshCache();
    await expectDomainError(cache.local(sha("nowhere")), 404, "block_not_found");
  });

  it("fetches a block once for concurrent requests, on each of two nodes at once", async () => {
    const { path, manifest } = await blockFile(8 * CHUNK, "concurrent");
    await bucket.upload(manifest, path);
    const a = await freshCache();
    const b = await freshCache();
    const results = await Promise.all([
      a.cache.local(manifest.sha256),
      a.cache.local(manifest.sha256),
      b.cache.local(manifest.sha256),
      b.cache.local(manifest.sha256),
    ]);
    for (const m of results) expect(m.sha256).toBe(manifest.sha256);
    expect([a.cache.stats.fetches, b.cache.stats.fetches]).toEqual([1, 1]);
    for (const { store } of [a, b])
      expect(sha(readFileSync(await store.checkedStatePath(manifest.sha256)))).toBe(manifest.sha256);
  });

  it.each([
    [
      "altered",
      (bytes: Buffer) => {
        const altered = Buffer.from(bytes);
        altered.writeUInt8(altered.readUInt8(3 * CHUNK + 7) ^ 1, 3 * CHUNK + 7);
        return altered;
      },
    ],
    ["truncated", (bytes: Buffer) => bytes.subarray(0, bytes.length - 1000)],
    ["extended", (bytes: Buffer) => Buffer.concat([bytes, Buffer.from("tail")])],
  ])("refuses a %s state object with 409 bucket_block_corrupt and keeps nothing", async (label, damage) => {
    const { path, manifest } = await blockFile(5 * CHUNK + 99, `damaged-${label}`);
    await bucket.upload(manifest, path);
    await putRaw(blockKeys(manifest.sha256).state, damage(readFileSync(path)));
    const { store, cache } = await freshCache();
    await expectDomainError(cache.local(manifest.sha256), 409, "bucket_block_corrupt");
    expect(store.has(manifest.sha256)).toBe(false);
    expect(readdirSync(store.blocksDir)).toEqual([]);
    expect(readdirSync(store.tmpDir)).toEqual([]);
  });

  it("refuses a manifest that does not name its own key", async () => {
    const { path, manifest } = await blockFile(CHUNK, "lying-manifest");
    const other = await blockFile(CHUNK, "other");
    await bucket.upload(manifest, path);
    await putRaw(blockKeys(manifest.sha256).manifest, Buffer.from(JSON.stringify(other.manifest)));
    const { cache } = await freshCache();
    await expectDomainError(cache.local(manifest.sha256), 409, "bucket_block_corrupt");
  });

  it("with the bucket unreachable: cached blocks still serve, uploads and fetches fail with 503 bucket_unavailable", async () => {
    const { path, manifest } = await blockFile(2 * CHUNK, "unreachable");
    const down = new BlockBucket({
      ...s3.config,
      url: `http://127.0.0.1:${await closedPort()}/kvgraft-blocks`,
    });
    const { store, cache } = await freshCache(down);
    const temp = store.tempPath("test");
    writeFileSync(temp, readFileSync(path));
    await store.adopt(temp, manifest);
    expect((await cache.local(manifest.sha256)).sha256).toBe(manifest.sha256);
    await expectDomainError(cache.makeDurable(manifest), 503, "bucket_unavailable");
    expect(cache.stats.uploads).toBe(0);
    await expectDomainError(cache.local(sha("elsewhere")), 503, "bucket_unavailable");
  });

  it("a connection cut in the middle of a ranged fetch fails it with 503 and keeps nothing", async () => {
    const { path, manifest } = await blockFile(8 * CHUNK, "cut-mid-fetch");
    await bucket.upload(manifest, path);
    // A loopback proxy in front of s3rver that cuts every connection once 300 KB came back.
    const target = new URL(s3.config.url);
    const sockets = new Set<Socket>();
    let served = 0;
    const proxy = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname);
      sockets.add(client).add(upstream);
      client.pipe(upstream);
      upstream.on("data", (d: Buffer) => {
        served += d.length;
        if (served > 300_000) for (const s of sockets) s.destroy();
        else client.write(d);
      });
      for (const s of [client, upstream]) s.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const { port } = proxy.address() as { port: number };
    try {
      const cut = new BlockBucket({ ...s3.config, url: `http://127.0.0.1:${port}${target.pathname}` });
      const { store, cache } = await freshCache(cut);
      await expectDomainError(cache.local(manifest.sha256), 503, "bucket_unavailable");
      expect(served).toBeGreaterThan(300_000);
      expect(store.has(manifest.sha256)).toBe(false);
      expect(readdirSync(store.blocksDir)).toEqual([]);
      expect(readdirSync(store.tmpDir)).toEqual([]);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it.each([
    ["a single PUT", {}],
    ["a multipart upload", { multipartThresholdBytes: 16 * 2 ** 20, partBytes: 5 * 2 ** 20 }],
  ])(
    "leaves no visible block when the uploading process is killed mid-upload (%s, manifest last)",
    async (label, limits) => {
      const { manifest } = await blockFile(CHUNK, `killed ${label}`);
      // A large sparse state file: the upload is still streaming when the process is killed.
      const statePath = join(freshDir("big"), "state");
      writeFileSync(statePath, "");
      truncateSync(statePath, 512 * 2 ** 20);
      const big = { ...manifest, sizeBytes: 512 * 2 ** 20 };
      const child = spawn(
        process.execPath,
        [
          "--import",
          "tsx",
          join(ROOT, "test/helpers/upload-child.ts"),
          JSON.stringify({ bucket: { ...s3.config, ...limits }, manifest: big, statePath }),
        ],
        { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
      );
      let out = "";
      await new Promise<void>((resolve) =>
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          if (out.includes("uploading")) resolve();
        }),
      );
      await new Promise((r) => setTimeout(r, 300));
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      expect(out).not.toContain("uploaded");
      expect(await bucket.has(big.sha256)).toBe(false);
      expect(await bucket.manifest(big.sha256)).toBeNull();
      const stateObject = await s3.raw.fetch(`${s3.config.url}/${blockKeys(big.sha256).state}`, {
        method: "HEAD",
      });
      // A killed single PUT may leave an orphan state object; a killed multipart upload never completes.
      if (label === "a multipart upload") expect(stateObject.status).toBe(404);
      const { cache } = await freshCache();
      await expectDomainError(cache.local(big.sha256), 404, "block_not_found");
    },
  );

  it.each([1, 3, 8])("fetches with %i ranged GETs at once into a file, byte-exact", async (parallel) => {
    const { path, manifest } = await blockFile(7 * CHUNK + 5, `parallel-${parallel}`);
    await bucket.upload(manifest, path);
    const ranged = new BlockBucket({ ...s3.config, fetchParallel: parallel });
    const dest = join(freshDir("dest"), "state");
    await ranged.download(manifest, fileDestination(dest));
    expect(readFileSync(dest).equals(readFileSync(path))).toBe(true);
  });

  it.each([
    ["an untagged", false],
    ["a tagged", true],
  ])(
    "fetches chunks that span several 8 MiB pieces for %s manifest into a file (hashed whole as it grows, so in offset order), byte-exact, and finds a damaged later piece",
    async (_, tagged) => {
      // 2 chunks of 20 MiB (pieces of 8, 8, 4 MiB) and one of 1 MiB + 3 bytes.
      const chunk = 20 * 2 ** 20;
      const { path, manifest } = await randomBlockFile(
        freshDir("multi"),
        2 * chunk + 2 ** 20 + 3,
        "multi-piece",
        chunk,
      );
      const node = new BlockBucket({
        ...s3.config,
        fetchParallel: 3,
        manifestSecrets: ["node-secret-multi-piece"],
      });
      const key = tagged ? `multi-piece-tagged-${manifest.sha256}` : blockKeys(manifest.sha256).state;
      if (tagged) await putRaw(key, readFileSync(path));
      else await bucket.upload(manifest, path);
      const dest = join(freshDir("dest"), "state");
      const fetched = await node.download(manifest, fileDestination(dest), { key, chunksTrusted: tagged });
      // A file is hashed whole as it grows either way (its pieces in offset order).
      expect(fetched.wholeChecked).toBe(true);
      expect(readFileSync(dest).equals(readFileSync(path))).toBe(true);
      // One byte changed in the second piece of chunk 1.
      const damaged = Buffer.from(readFileSync(path));
      const at = chunk + 8 * 2 ** 20 + 77;
      damaged.writeUInt8(damaged.readUInt8(at) ^ 1, at);
      await putRaw(key, damaged);
      await expect(
        node.download(manifest, fileDestination(join(freshDir("dest"), "state")), {
          key,
          chunksTrusted: tagged,
        }),
      ).rejects.toThrow(/chunk 1 differs/);
    },
  );

  it("tags the manifests a node uploads: trusted under its secrets only, and not once rewritten", async () => {
    const tagging = new BlockBucket({ ...s3.config, manifestSecrets: ["node-secret-current-0123"] });
    const rotated = new BlockBucket({
      ...s3.config,
      manifestSecrets: ["node-secret-next-0123456", "node-secret-current-0123"],
    });
    const stranger = new BlockBucket({ ...s3.config, manifestSecrets: ["another-cluster-secret-1"] });
    const { path, manifest } = await blockFile(2 * CHUNK + 3, "tagged");
    await tagging.upload(manifest, path);
    const key = blockKeys(manifest.sha256).manifest;
    expect((await tagging.manifestAt(key, manifest.sha256))?.authenticated).toBe(true);
    expect((await rotated.manifestAt(key, manifest.sha256))?.authenticated).toBe(true);
    expect((await stranger.manifestAt(key, manifest.sha256))?.authenticated).toBe(false);
    expect((await bucket.manifestAt(key, manifest.sha256))?.authenticated).toBe(false);
    // The same manifest written again without the node's tag (by anyone with bucket access).
    await putRaw(key, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`));
    expect((await tagging.manifestAt(key, manifest.sha256))?.authenticated).toBe(false);
  });

  it("refuses chunk hashes that match altered bytes: the whole file's SHA-256 names the block", async () => {
    const { path, manifest } = await blockFile(3 * CHUNK, "rehashed");
    await bucket.upload(manifest, path);
    const altered = Buffer.from(readFileSync(path));
    altered.writeUInt8(altered.readUInt8(CHUNK + 1) ^ 1, CHUNK + 1);
    const alteredPath = join(freshDir("altered"), "state");
    writeFileSync(alteredPath, altered);
    const rehashed = await hashFileWithChunks(alteredPath, CHUNK);
    await putRaw(blockKeys(manifest.sha256).state, altered);
    await putRaw(
      blockKeys(manifest.sha256).manifest,
      Buffer.from(JSON.stringify({ ...manifest, chunks: { bytes: CHUNK, sha256: rehashed.chunks } })),
    );
    const { store, cache } = await freshCache();
    const err = await cache.local(manifest.sha256).then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as DomainError).code).toBe("bucket_block_corrupt");
    expect((err as DomainError).message).toContain("SHA-256 differs");
    expect(readdirSync(store.blocksDir)).toEqual([]);
    expect(readdirSync(store.tmpDir)).toEqual([]);
  });

  it("uploads a state above the multipart threshold in parts and fetches it byte-exact", async () => {
    const size = 12 * 2 ** 20 + 123;
    const { path, manifest } = await blockFile(size, "multipart");
    const parts = new BlockBucket({
      ...s3.config,
      multipartThresholdBytes: 8 * 2 ** 20,
      partBytes: 5 * 2 ** 20,
    });
    await parts.upload(manifest, path);
    const object = await s3.raw.fetch(`${s3.config.url}/${blockKeys(manifest.sha256).state}`);
    expect(Buffer.from(await object.arrayBuffer()).equals(readFileSync(path))).toBe(true);
    const { store, cache } = await freshCache();
    await cache.local(manifest.sha256);
    expect(readFileSync(store.statePath(manifest.sha256)).equals(readFileSync(path))).toBe(true);
  });

  it("a multipart upload that fails in a part leaves no object and no block (503, aborted)", async () => {
    const size = 12 * 2 ** 20;
    const { path, manifest } = await blockFile(size, "multipart-fails");
    // The file ends 1 MiB before the size the manifest says: the last part cannot be sent whole.
    truncateSync(path, size - 2 ** 20);
    const parts = new BlockBucket({
      ...s3.config,
      multipartThresholdBytes: 8 * 2 ** 20,
      partBytes: 5 * 2 ** 20,
    });
    const err = await parts.upload(manifest, path).then(
      () => null,
      (e: unknown) => e,
    );
    expect({ status: (err as DomainError).status, code: (err as DomainError).code }).toEqual({
      status: 503,
      code: "bucket_unavailable",
    });
    expect((err as DomainError).message).toContain("partNumber=3");
    const object = await s3.raw.fetch(`${s3.config.url}/${blockKeys(manifest.sha256).state}`, {
      method: "HEAD",
    });
    expect(object.status).toBe(404);
    expect(await bucket.has(manifest.sha256)).toBe(false);
  });

  it("a presigned PUT URL writes its one object until it expires", async () => {
    const key = uploadKeys("0123456789abcdef0123456789abcdef", sha("presigned")).state;
    const url = await presignPut(s3.config, key, 1);
    expect(url).toContain("X-Amz-Signature=");
    expect((await fetch(url, { method: "PUT", body: "bytes" })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2100));
    expect((await fetch(url, { method: "PUT", body: "later" })).status).toBe(403);
    const stored = await s3.raw.fetch(`${s3.config.url}/${key}`);
    expect(await stored.text()).toBe("bytes");
  });

  it("keeps local disk within its budget by evicting the least recently used durable blocks only", async () => {
    const size = 2 * CHUNK;
    const blocks = await Promise.all(["lru-a", "lru-b", "lru-c"].map((l) => blockFile(size, l)));
    const local = await blockFile(size, "lru-local-only");
    const { store, cache } = await freshCache(bucket, 2 * size);
    // A block that is only on this node (not in the bucket) is never evicted.
    const temp = store.tempPath("test");
    writeFileSync(temp, readFileSync(local.path));
    await store.adopt(temp, local.manifest);
    for (const b of blocks) await bucket.upload(b.manifest, b.path);
    const [a, b, c] = blocks.map((x) => x.manifest.sha256) as [string, string, string];
    await cache.local(a);
    await cache.local(b);
    expect(cache.stats.evictions).toBe(1);
    expect(store.has(a)).toBe(false);
    expect(store.has(local.manifest.sha256)).toBe(true);
    await cache.local(c);
    expect(store.has(b)).toBe(false);
    expect(store.has(c)).toBe(true);
    expect(store.has(local.manifest.sha256)).toBe(true);
    expect(existsSync(store.statePath(a))).toBe(false);
    // An evicted block comes back from the bucket on its next use.
    await cache.local(a);
    expect(store.has(a)).toBe(true);
    expect(cache.stats.fetches).toBe(4);
  });
});

describe("bucket configuration", () => {
  it("reads the bucket from the environment, region auto by default; none without a URL", () => {
    const env = readGpuEnv({
      KVGRAFT_BUCKET_URL: "https://acct.r2.cloudflarestorage.com/kvgraft-blocks",
      KVGRAFT_BUCKET_ACCESS_KEY_ID: "id",
      KVGRAFT_BUCKET_SECRET_ACCESS_KEY: "secret",
      KVGRAFT_DISK_BUDGET_BYTES: "1000",
    });
    expect(bucketConfig(env)).toEqual({
      url: "https://acct.r2.cloudflarestorage.com/kvgraft-blocks",
      accessKeyId: "id",
      secretAccessKey: "secret",
      region: "auto",
    });
    expect(env.KVGRAFT_DISK_BUDGET_BYTES).toBe(1000);
    expect(bucketConfig(readGpuEnv({}))).toBeUndefined();
  });

  it("reads the fetch parallelism and the multipart limits", () => {
    const env = readGpuEnv({
      KVGRAFT_BUCKET_URL: "https://acct.r2.cloudflarestorage.com/kvgraft-blocks",
      KVGRAFT_BUCKET_ACCESS_KEY_ID: "id",
      KVGRAFT_BUCKET_SECRET_ACCESS_KEY: "secret",
      KVGRAFT_BUCKET_FETCH_PARALLEL: "6",
      KVGRAFT_BUCKET_MULTIPART_THRESHOLD_BYTES: "1000000000",
      KVGRAFT_BUCKET_PART_BYTES: "8388608",
    });
    expect(bucketConfig(env)).toMatchObject({
      fetchParallel: 6,
      multipartThresholdBytes: 1e9,
      partBytes: 8 * 2 ** 20,
    });
  });

  it.each([
    [{ KVGRAFT_BUCKET_PART_BYTES: "1048576" }, "5 MiB"],
    [{ KVGRAFT_BUCKET_URL: "https://acct.r2.cloudflarestorage.com/b" }, "KVGRAFT_BUCKET_SECRET_ACCESS_KEY"],
    [
      {
        KVGRAFT_BUCKET_URL: "https://acct.r2.cloudflarestorage.com/",
        KVGRAFT_BUCKET_ACCESS_KEY_ID: "i",
        KVGRAFT_BUCKET_SECRET_ACCESS_KEY: "s",
      },
      "bucket name",
    ],
    [
      {
        KVGRAFT_BUCKET_URL: "ftp://host/b",
        KVGRAFT_BUCKET_ACCESS_KEY_ID: "i",
        KVGRAFT_BUCKET_SECRET_ACCESS_KEY: "s",
      },
      "KVGRAFT_BUCKET_URL",
    ],
  ])("refuses %j, naming what is wrong", (env, named) => {
    expect(() => readGpuEnv(env)).toThrow(named);
  });
});
