/**
 * `bench bucket`: a graft of a block the node has on its disk (local cold restore) versus a graft
 * of the same block fetched from a bucket, through the block service a node runs (BlockService):
 * s3rver on loopback in a process of its own, the node's real engine and tiers.
 *
 * One node, one block of `tokens` random tokens deposited (and so uploaded) once, the probe
 * checked then, so no later graft pays the probe check. Then per run, with a warm-up run first:
 * - local cold: the block only on disk (slots and warm tier emptied), page cache dropped; the
 *   graft reads it hash-checked (engine build: one checked read into the pinned arena) and loads it;
 * - bucket, server cache warm: the block deleted from the node (it stays in the bucket), page
 *   cache dropped, then s3rver's files read back into it, as a store serving from memory would;
 *   the graft fetches it (ranged GETs of 8 MiB pieces, hashed as they arrive) and loads it;
 * - bucket, server cache cold: the same with the page cache dropped, s3rver reading from disk.
 * `restoreMs` is the graft's own figure, from its start until the slot holds the block;
 * `graftMs` the whole graft (a few query tokens and one generated token on top). On the engine
 * build the fetched block is served from the arena while its file is committed behind the graft:
 * `persistMs` is how long after the graft that commit ended; `fetch` when the fetch's stages
 * ended (manifest, first and last bytes stored, every hash checked), from its manifest GET.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, open, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { BlockBucket, type BucketConfig } from "../gpu-node/blocks/bucket/bucket.js";
import type { LastFetch } from "../gpu-node/blocks/bucket/disk-cache.js";
import { Engine, type EngineOptions, type KvType } from "../gpu-node/engine/engine.js";
import { quantile, randomTokens } from "../gpu-node/verify.js";
import { Xoshiro128 } from "../shared/random.js";
import { dropPageCache } from "./page-cache.js";

/** The target applies to blocks of at least this many bytes. */
export const TARGET_MIN_BYTES = 256 * 2 ** 20;

export interface BucketBenchOptions {
  modelPath: string;
  /** Tokens in the block (its state grows with them: ~393 KB a token on the 12b preset, f16 KV). */
  tokens: number;
  runs: number;
  kv: KvType;
  /** Ranged GETs in flight per fetch (KVGRAFT_BUCKET_FETCH_PARALLEL). */
  parallel: number;
  /** A fresh folder is made in it for the node's store and s3rver's files (one disk); default the OS temp folder. */
  dataDir?: string;
  /** A folder whose node_modules has s3rver (scripts/stage-s3rver.sh). */
  s3rverDir: string;
  /**
   * The node tags the manifests it uploads (as one with KVGRAFT_GPU_SECRET does), so a fetch
   * serves once every chunk matched; false: untagged, the whole state is hashed first.
   */
  taggedManifests: boolean;
  /** The warm tier's budget (the pinned arena on the engine build); must hold the block. */
  warmBudgetBytes: number;
  engine: Pick<EngineOptions, "binary" | "threads">;
  log: (line: string) => void;
}

type Path = "local" | "bucketServerWarm" | "bucketServerCold";
const PATHS: Path[] = ["local", "bucketServerWarm", "bucketServerCold"];

export interface BucketBenchRun {
  run: number;
  path: Path;
  tier: string;
  restoreMs: number;
  graftMs: number;
  /** Bucket paths: from the graft's answer until the fetched file was committed to disk. */
  persistMs: number | null;
  /** Bucket paths: when the fetch's stages ended, in ms from its manifest GET. */
  fetch: FetchStages | null;
}

/** The fetch's stages (DiskCache.lastFetch): manifest, first and last bytes stored, every hash checked. */
type FetchStages = Pick<
  LastFetch,
  "manifestMs" | "firstBytesMs" | "allBytesMs" | "hashedMs" | "wholeChecked"
>;

export interface BucketBenchResult {
  model: string;
  tokens: number;
  kv: KvType;
  stateBytes: number;
  meetsMinimumSize: boolean;
  parallel: number;
  taggedManifests: boolean;
  /** "memory": the engine build's pinned arena; "file": node-llama-cpp's file path. */
  statePath: "memory" | "file";
  pageCacheDropped: boolean;
  runs: number;
  /** Medians over the timed runs, by path. */
  medians: Record<
    Path,
    { restoreMs: number; graftMs: number; persistMs: number | null; MBps: number; fetch: FetchStages | null }
  >;
  /** Local cold restore time over the bucket path's (1 = as fast; the target is >= 0.8), restoreMs. */
  vsLocal: { bucketServerWarm: number; bucketServerCold: number };
  perRun: BucketBenchRun[];
}

const median = (values: number[]) => quantile(values, 0.5);

/**
 * s3rver in a child process (its own event loop, as a real store), CommonJS `require` from
 * `s3rverDir` so a staged copy outside the app works; resolves once it listens.
 */
export async function startS3rver(s3rverDir: string, directory: string) {
  const script = `const S3rver = require("s3rver");
    new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: ${JSON.stringify(directory)},
      configureBuckets: [{ name: "kvgraft-blocks" }] }).run().then(({ port }) => console.log(port));`;
  const child = spawn(process.execPath, ["-e", script], {
    cwd: s3rverDir,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once("exit", (code) =>
      reject(
        new Error(
          `s3rver exited with ${code} (is it installed in ${s3rverDir}? see scripts/stage-s3rver.sh)`,
        ),
      ),
    );
  });
  const config: BucketConfig = {
    url: `http://127.0.0.1:${port}/kvgraft-blocks`,
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    region: "us-east-1",
  };
  return { config, stop: () => child.kill() };
}

/**
 * Reads every file under `dir` (s3rver's objects) so the page cache holds them, through one
 * reused buffer: a stream's fresh buffers left the next fetch a garbage collection to pay.
 */
async function readAll(dir: string, buffer = Buffer.allocUnsafe(16 * 2 ** 20)): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await readAll(path, buffer);
    else if (entry.isFile()) {
      const file = await open(path, "r");
      try {
        while ((await file.read(buffer, 0, buffer.length, null)).bytesRead > 0);
      } finally {
        await file.close();
      }
    }
  }
}

/** Runs the benchmark; see the file's comment. */
export async function benchBucketServe(o: BucketBenchOptions): Promise<BucketBenchResult> {
  if (o.dataDir) await mkdir(o.dataDir, { recursive: true });
  const root = await mkdtemp(join(o.dataDir ?? tmpdir(), "kvgraft-bench-bucket-"));
  const s3Dir = join(root, "s3");
  await mkdir(s3Dir);
  const s3 = await startS3rver(o.s3rverDir, s3Dir).catch(async (err: unknown) => {
    await rm(root, { recursive: true, force: true });
    throw err;
  });
  const engine = await Engine.open({
    modelPath: o.modelPath,
    slots: 2,
    contextSize: o.tokens + 64,
    kvType: o.kv,
    ...o.engine,
  });
  let service: BlockService | null = null;
  try {
    const bucket = new BlockBucket({
      ...s3.config,
      fetchParallel: o.parallel,
      ...(o.taggedManifests ? { manifestSecrets: ["bench-bucket-node-secret"] } : {}),
    });
    service = await BlockService.open({
      engine,
      dataDir: join(root, "node"),
      warmBudgetBytes: o.warmBudgetBytes,
      bucket,
    });
    const blocks = service;
    const tokens = randomTokens(new Xoshiro128("bench-bucket"), o.tokens, engine.vocabSize);
    let started = performance.now();
    const manifest = await blocks.depositTokens(tokens);
    const sha = manifest.sha256;
    o.log(
      `deposited and uploaded ${o.tokens} tokens (${(manifest.sizeBytes / 2 ** 20).toFixed(1)} MiB of state) in ${Math.round(performance.now() - started)} ms`,
    );
    const query = " Answer:";
    let dropped = false;
    const perRun: BucketBenchRun[] = [];
    for (let run = 0; run <= o.runs; run++) {
      for (const path of PATHS) {
        if (path === "local") {
          blocks.pool.evict(sha);
          await blocks.dropRamCopy(sha);
        } else {
          await blocks.delete(sha);
        }
        dropped = await dropPageCache();
        if (path === "bucketServerWarm") await readAll(s3Dir);
        const fetchesBefore = blocks.disk.stats.fetches;
        started = performance.now();
        const answer = await blocks.graft(sha, query, { maxTokens: 1 });
        const graftMs = performance.now() - started;
        let persistMs: number | null = null;
        if (path !== "local") {
          if (blocks.disk.stats.fetches !== fetchesBefore + 1)
            throw new Error("the graft did not fetch the block");
          const answered = performance.now();
          await blocks.disk.settled();
          persistMs = performance.now() - answered;
          if (!blocks.store.has(sha)) throw new Error("the fetched block was not committed to disk");
          if (blocks.state.arena && answer.tier !== "warm")
            throw new Error("the fetch did not fill the arena: raise --warm-budget-bytes above the block");
        } else if (answer.tier !== "cold") throw new Error(`local restore came from tier ${answer.tier}`);
        const last = path === "local" ? null : blocks.disk.lastFetch;
        const row: BucketBenchRun = {
          run,
          path,
          tier: String(answer.tier),
          restoreMs: answer.timings.restoreMs,
          graftMs,
          persistMs,
          fetch: last && {
            manifestMs: last.manifestMs,
            firstBytesMs: last.firstBytesMs,
            allBytesMs: last.allBytesMs,
            hashedMs: last.hashedMs,
            wholeChecked: last.wholeChecked,
          },
        };
        o.log(JSON.stringify({ ...row, warmup: run === 0 }));
        if (run > 0) perRun.push(row);
      }
    }
    const of = (path: Path) => perRun.filter((r) => r.path === path);
    const medians = Object.fromEntries(
      PATHS.map((path) => {
        const rows = of(path);
        const restoreMs = median(rows.map((r) => r.restoreMs));
        const persist = rows.flatMap((r) => (r.persistMs === null ? [] : [r.persistMs]));
        const stages = rows.flatMap((r) => (r.fetch ? [r.fetch] : []));
        const stage = (key: Exclude<keyof FetchStages, "wholeChecked">) => median(stages.map((f) => f[key]));
        return [
          path,
          {
            restoreMs,
            graftMs: median(rows.map((r) => r.graftMs)),
            persistMs: persist.length ? median(persist) : null,
            MBps: manifest.sizeBytes / 1e6 / (restoreMs / 1000),
            fetch: stages.length
              ? {
                  manifestMs: stage("manifestMs"),
                  firstBytesMs: stage("firstBytesMs"),
                  allBytesMs: stage("allBytesMs"),
                  hashedMs: stage("hashedMs"),
                  wholeChecked: stages.every((f) => f.wholeChecked),
                }
              : null,
          },
        ];
      }),
    ) as BucketBenchResult["medians"];
    const ratio = (path: Path) => Number((medians.local.restoreMs / medians[path].restoreMs).toFixed(3));
    return {
      model: o.modelPath,
      tokens: o.tokens,
      kv: o.kv,
      stateBytes: manifest.sizeBytes,
      meetsMinimumSize: manifest.sizeBytes >= TARGET_MIN_BYTES,
      parallel: o.parallel,
      taggedManifests: o.taggedManifests,
      statePath: blocks.state.arena ? "memory" : "file",
      pageCacheDropped: dropped,
      runs: o.runs,
      medians,
      vsLocal: { bucketServerWarm: ratio("bucketServerWarm"), bucketServerCold: ratio("bucketServerCold") },
      perRun,
    };
  } finally {
    await service?.close();
    await engine.dispose();
    s3.stop();
    await rm(root, { recursive: true, force: true });
  }
}
