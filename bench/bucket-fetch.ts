/**
 * Bucket fetch versus local cold read, on loopback: a block of `--mb` MiB of random bytes is
 * uploaded to s3rver (a real S3-compatible server, files on this machine's disk), then timed
 * (a) read from the node's own disk with its hash check (`checkedStatePath`: per-chunk SHA-256
 * in parallel), page cache dropped first where permitted, and (b) fetched from the bucket into a
 * fresh store (streamed, each chunk hashed as it arrives, written, committed). The engine load
 * that follows either is the same and is not timed here.
 *
 * Usage: node --import tsx bench/bucket-fetch.ts [--mb 256] [--runs 3]
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import S3rver from "s3rver";
import { BlockStore } from "../gpu-node/blocks/block-store.js";
import { BlockBucket } from "../gpu-node/blocks/bucket.js";
import { DiskCache } from "../gpu-node/blocks/disk-cache.js";
import { BLOCK_FORMAT_VERSION } from "../shared/protocol.js";
import { dropPageCache } from "./page-cache.js";

const { values } = parseArgs({
  options: { mb: { type: "string", default: "256" }, runs: { type: "string", default: "3" } },
});
const sizeBytes = Number(values.mb) * 2 ** 20;
const runs = Number(values.runs);
const root = mkdtempSync(join(tmpdir(), "kvgraft-bench-bucket-"));
const s3 = new S3rver({
  address: "127.0.0.1",
  port: 0,
  silent: true,
  directory: join(root, "s3"),
  configureBuckets: [{ name: "blocks" }],
});
const { port } = await s3.run();
const bucket = new BlockBucket({
  url: `http://127.0.0.1:${port}/blocks`,
  accessKeyId: "S3RVER",
  secretAccessKey: "S3RVER",
  region: "us-east-1",
});
try {
  const { store: source } = await BlockStore.open(join(root, "source"));
  const temp = source.tempPath("bench");
  const file = await open(temp, "w");
  for (let done = 0; done < sizeBytes; done += 1 << 24)
    await file.write(randomBytes(Math.min(1 << 24, sizeBytes - done)));
  await file.close();
  const zero = "0".repeat(64);
  const fingerprint = { sha256: zero, sizeBytes: 0, architecture: "bench", name: "bench" };
  const engine = {
    nodeLlamaCpp: "-",
    llamaCppRelease: "-",
    backend: "cpu",
    gpuName: null,
    computeCapability: null,
    id: zero,
    context: {
      kvKeyType: "F16",
      kvValueType: "F16",
      flashAttention: false,
      swaFullCache: false,
      batchSize: 1,
      sequences: 1,
    },
  };
  const manifest = await source.commit(temp, {
    formatVersion: BLOCK_FORMAT_VERSION,
    tokenCount: 1,
    tokensSha256: zero,
    textSha256: zero,
    model: fingerprint,
    engine,
    probe: { token: 0, sha256: zero },
    createdAt: new Date().toISOString(),
  });
  await bucket.upload(manifest, source.statePath(manifest.sha256));
  const mbps = (ms: number) => ((sizeBytes / 2 ** 20 / ms) * 1000).toFixed(0);
  const dropped = await dropPageCache();
  for (let run = 1; run <= runs; run++) {
    await dropPageCache();
    let started = performance.now();
    await source.checkedStatePath(manifest.sha256);
    const localMs = performance.now() - started;
    const { store } = await BlockStore.open(join(root, `node-${run}`));
    const cache = new DiskCache(store, { bucket }, async () => {});
    await dropPageCache();
    started = performance.now();
    await cache.local(manifest.sha256);
    const fetchMs = performance.now() - started;
    console.log(
      JSON.stringify({
        run,
        mib: Number(values.mb),
        pageCacheDropped: dropped,
        localCheckedReadMs: Math.round(localMs),
        localMiBps: Number(mbps(localMs)),
        bucketFetchMs: Math.round(fetchMs),
        fetchMiBps: Number(mbps(fetchMs)),
        fetchVsLocal: Number((localMs / fetchMs).toFixed(2)),
      }),
    );
    rmSync(join(root, `node-${run}`), { recursive: true, force: true });
  }
} finally {
  await s3.close();
  rmSync(root, { recursive: true, force: true });
}
