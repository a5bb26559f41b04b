/**
 * Bucket fetch versus local cold read, on loopback: a block of `--mb` MiB of random bytes is
 * uploaded to s3rver (a real S3-compatible server in its own process, files on this machine's
 * disk), then timed
 * (a) read from the node's own disk with its hash check (`checkedStatePath`: per-chunk SHA-256
 * in parallel), page cache dropped first where permitted; (b) for each `--parallel` count, fetched
 * from the bucket into a fresh store with that many ranged GETs at once (written, each range and
 * the whole file hashed as the bytes arrive, fsync, committed); (c) the same ranged GETs with the bodies
 * discarded: what the server alone delivers. The engine load that follows (a) or (b) is the same
 * and is not timed here (this machine has no engine build). Prints each run, then the medians.
 *
 * Usage: node --import tsx bench/bucket-fetch.ts [--mb 256] [--runs 3] [--parallel 1,2,4]
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { AwsClient } from "aws4fetch";
import { BlockBucket, blockKeys } from "../gpu-node/blocks/bucket/bucket.js";
import { DiskCache } from "../gpu-node/blocks/bucket/disk-cache.js";
import { BlockStore } from "../gpu-node/blocks/store/block-store.js";
import { quantile } from "../gpu-node/verify.js";
import { manifestFields } from "../shared/block-manifest.js";
import { dropPageCache } from "./page-cache.js";

const { values } = parseArgs({
  options: {
    mb: { type: "string", default: "256" },
    runs: { type: "string", default: "3" },
    parallel: { type: "string", default: "1,2,4" },
  },
});
const parallels = values.parallel.split(",").map(Number);
const sizeBytes = Number(values.mb) * 2 ** 20;
const runs = Number(values.runs);
const root = mkdtempSync(join(tmpdir(), "kvgraft-bench-bucket-"));
// The server runs in a process of its own, as a real store would: not on the client's event loop.
const server = spawn(
  process.execPath,
  [
    "--input-type=module",
    "-e",
    `import S3rver from "s3rver";
     const s3 = new S3rver({ address: "127.0.0.1", port: 0, silent: true,
       directory: ${JSON.stringify(join(root, "s3"))}, configureBuckets: [{ name: "blocks" }] });
     const { port } = await s3.run();
     console.log(port);`,
  ],
  { cwd: join(import.meta.dirname, ".."), stdio: ["ignore", "pipe", "inherit"] },
);
const port = await new Promise<number>((resolve, reject) => {
  server.stdout.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
  server.once("exit", (code) => reject(new Error(`s3rver exited with ${code}`)));
});
let stateSha = "";
const config = {
  url: `http://127.0.0.1:${port}/blocks`,
  accessKeyId: "S3RVER",
  secretAccessKey: "S3RVER",
  region: "us-east-1",
};
const bucket = new BlockBucket(config);
const raw = new AwsClient({ ...config, service: "s3", retries: 0 });

const median = (values: number[]) => quantile(values, 0.5);

/** The state object in 64 MiB ranges, `parallel` GETs at once, bodies read and discarded. */
async function rawRangedGets(parallel: number): Promise<void> {
  const range = 64 * 2 ** 20;
  const count = Math.ceil(sizeBytes / range);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const start = range * next++;
      const end = Math.min(start + range, sizeBytes) - 1;
      const res = await raw.fetch(`${config.url}/${blockKeys(stateSha).state}`, {
        headers: { range: `bytes=${start}-${end}` },
      });
      if (res.status !== 206 || !res.body) throw new Error(`ranged GET: status ${res.status}`);
      for await (const _ of res.body);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, worker));
}
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
  const manifest = await source.commit(
    temp,
    manifestFields({
      tokenCount: 1,
      tokensSha256: zero,
      textSha256: zero,
      model: fingerprint,
      engine,
      probe: { token: 0, sha256: zero },
    }),
  );
  await bucket.upload(manifest, source.statePath(manifest.sha256));
  stateSha = manifest.sha256;
  const mbps = (ms: number) => Math.round((sizeBytes / 2 ** 20 / ms) * 1000);
  const dropped = await dropPageCache();
  const timings = new Map<string, number[]>();
  const record = (label: string, ms: number) => {
    timings.set(label, [...(timings.get(label) ?? []), ms]);
    return Math.round(ms);
  };
  for (let run = 1; run <= runs; run++) {
    const line: Record<string, number | boolean> = { run, mib: Number(values.mb), pageCacheDropped: dropped };
    await dropPageCache();
    let started = performance.now();
    await source.checkedStatePath(manifest.sha256);
    line.localCheckedReadMs = record("local checked read", performance.now() - started);
    for (const parallel of parallels) {
      const ranged = new BlockBucket({ ...config, fetchParallel: parallel });
      const { store } = await BlockStore.open(join(root, `node-${run}-${parallel}`));
      const cache = new DiskCache(store, { bucket: ranged }, async () => {});
      await dropPageCache();
      started = performance.now();
      await cache.local(manifest.sha256);
      line[`fetchP${parallel}Ms`] = record(
        `bucket fetch, ${parallel} ranged GETs`,
        performance.now() - started,
      );
      rmSync(join(root, `node-${run}-${parallel}`), { recursive: true, force: true });
      started = performance.now();
      await rawRangedGets(parallel);
      line[`rawP${parallel}Ms`] = record(
        `raw ranged GETs, ${parallel} at once, bodies discarded`,
        performance.now() - started,
      );
    }
    console.log(JSON.stringify(line));
  }
  const localMedian = median(timings.get("local checked read") ?? []);
  for (const [label, ms] of timings) {
    const m = median(ms);
    console.log(
      JSON.stringify({
        median: label,
        runs: ms.length,
        ms: Math.round(m),
        MiBps: mbps(m),
        vsLocal: Number((localMedian / m).toFixed(2)),
      }),
    );
  }
} finally {
  server.kill();
  rmSync(root, { recursive: true, force: true });
}
