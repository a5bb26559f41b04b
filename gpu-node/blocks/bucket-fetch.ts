/**
 * Fetching a block's state from the bucket with several ranged GETs at once, one per hash chunk
 * of the manifest: each range is written at its offset in the temp file as its bytes arrive (and,
 * on the engine build, copied into the warm arena as well). A worker thread reads the file back
 * in order as ranges complete and hashes it in one pass: each range's SHA-256 (checked against the
 * manifest) and the whole file's, which binds the manifest's chunk hashes to the block's name. So
 * the hashing runs behind the downloads, off the thread that receives them. The first range that
 * fails stops the others. The file is not fsynced here: the block store fsyncs it when it commits
 * it (`BlockStore.adopt`).
 */
import { type FileHandle, open } from "node:fs/promises";
import { Worker } from "node:worker_threads";
import { conflict } from "../../shared/errors.js";
import type { BlockManifest } from "../../shared/protocol.js";

/** Range size when a manifest has no chunk hashes (blocks from before they existed). */
const DEFAULT_RANGE_BYTES = 64 * 2 ** 20;
/** Bytes gathered from the network before one write to the temp file. */
const WRITE_BATCH_BYTES = 8 * 2 ** 20;
/** Ranged GETs in flight when the configuration names no number. */
export const DEFAULT_FETCH_PARALLEL = 4;

/** A second home for fetched bytes (the warm arena); written as they arrive, kept only if all match. */
export interface FetchTarget {
  write(offset: number, bytes: Uint8Array): void;
}

/** A signed GET of the block's state object for `bytes=start-end` (inclusive). */
export type RangedGet = (start: number, end: number, signal: AbortSignal) => Promise<Response>;

/** How a failed range is reported: a network or server fault versus damaged bytes. */
export interface FetchFaults {
  down(what: string, cause: unknown): Error;
  corrupt(why: string): Error;
}

/** Builds the 409 `bucket_block_corrupt` error of a block. */
export function corruptBlock(sha: string): (why: string) => Error {
  return (why) =>
    conflict("bucket_block_corrupt", `block ${sha} in the bucket is damaged: ${why}`, { sha256: sha });
}

/**
 * Downloads the state of `manifest` into `destPath` (created) with `parallel` ranged GETs,
 * writing every byte to `target` too when given. Resolves once every range's SHA-256 matched
 * the manifest, the total length matched and the whole file hashed to the block's name (the file
 * is written, not yet fsynced); otherwise throws (the caller deletes `destPath` and drops `target`).
 */
export async function fetchRanges(
  get: RangedGet,
  manifest: BlockManifest,
  destPath: string,
  options: { parallel: number; target?: FetchTarget | undefined; faults: FetchFaults },
): Promise<void> {
  const { faults } = options;
  const rangeBytes = manifest.chunks?.bytes ?? DEFAULT_RANGE_BYTES;
  const count = Math.ceil(manifest.sizeBytes / rangeBytes);
  if (manifest.chunks && manifest.chunks.sha256.length !== Math.max(1, count))
    throw faults.corrupt("its manifest's chunk list does not match its size");
  const abort = new AbortController();
  let failure: unknown = null;
  const fail = (err: unknown) => {
    if (failure === null) failure = err;
    abort.abort();
  };
  const file = await open(destPath, "w+", 0o644);
  const parallel = Math.max(1, Math.min(options.parallel, count));
  const hashes = new FileHasher(
    { fd: file.fd, rangeBytes, sizeBytes: manifest.sizeBytes, count },
    manifest.chunks ? parallel : 0,
    (index, digest) => {
      if (digest !== manifest.chunks?.sha256[index]) fail(faults.corrupt(`chunk ${index} differs`));
    },
  );
  let next = 0;
  const worker = async (): Promise<void> => {
    while (failure === null && next < count) {
      const index = next++;
      try {
        await fetchRange(get, index, rangeBytes, manifest.sizeBytes, file, options, abort.signal);
        hashes.done(index);
      } catch (err) {
        fail(err);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: parallel }, worker));
    if (failure !== null) throw failure;
    const whole = await hashes.digest();
    // The last ranges' digests arrive behind the downloads.
    if (failure !== null) throw failure;
    if (whole !== manifest.sha256) throw faults.corrupt("the file's SHA-256 differs");
  } finally {
    await hashes.stop();
    await file.close();
  }
}

/** One ranged GET: streamed into the file (batched writes) and `target`; resolves once all is written. */
async function fetchRange(
  get: RangedGet,
  index: number,
  rangeBytes: number,
  sizeBytes: number,
  file: FileHandle,
  options: { target?: FetchTarget | undefined; faults: FetchFaults },
  signal: AbortSignal,
): Promise<void> {
  const { faults, target } = options;
  const start = index * rangeBytes;
  const length = Math.min(rangeBytes, sizeBytes - start);
  const res = await get(start, start + length - 1, signal);
  if (res.status === 404 || res.status === 416) {
    await res.body?.cancel();
    throw res.status === 404
      ? faults.corrupt("the manifest is there but the state object is not")
      : faults.corrupt(`shorter than the ${sizeBytes} bytes its manifest says`);
  }
  // A 200 (the whole object) is a valid answer only when the range is the whole object.
  if (res.status !== 206 && !(res.status === 200 && length === sizeBytes)) {
    await res.body?.cancel();
    throw faults.down("GET state range", `status ${res.status}`);
  }
  // The object's total length, from Content-Range: a longer or shorter object is refused at once.
  const total =
    res.status === 206 ? Number(/\/(\d+)$/.exec(res.headers.get("content-range") ?? "")?.[1]) : NaN;
  const objectBytes = res.status === 206 ? total : Number(res.headers.get("content-length"));
  if (objectBytes !== sizeBytes) {
    await res.body?.cancel();
    throw faults.corrupt(`the state object is ${objectBytes} bytes, its manifest says ${sizeBytes}`);
  }
  if (!res.body) throw faults.down("GET state range", "no body");
  const reader = res.body.getReader();
  // Once the fetch is aborted mid-body, a pending read of undici's body may never settle (seen
  // under load when another range failed): the loop stops on the signal itself.
  const stopped = new Promise<never>((_, reject) => {
    const stop = () => reject(signal.reason);
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
  });
  stopped.catch(() => undefined);
  let received = 0;
  let batch: Uint8Array[] = [];
  let batchBytes = 0;
  let batchAt = start;
  const flush = async () => {
    if (batchBytes === 0) return;
    const bufs = batch;
    const at = batchAt;
    batch = [];
    batchAt += batchBytes;
    batchBytes = 0;
    await file.writev(bufs, at);
  };
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await Promise.race([reader.read(), stopped]);
      } catch (err) {
        throw faults.down("GET state body", err);
      }
      if (chunk.done) break;
      const bytes = chunk.value;
      if (received + bytes.length > length) throw faults.corrupt(`range ${index} is longer than asked`);
      target?.write(start + received, bytes);
      received += bytes.length;
      batch.push(bytes);
      batchBytes += bytes.length;
      if (batchBytes >= WRITE_BATCH_BYTES) await flush();
    }
    if (received !== length) throw faults.corrupt(`range ${index} ended at ${received} of ${length} bytes`);
    await flush();
  } catch (err) {
    // Not awaited: after an abort the cancel may not settle either.
    void reader.cancel().catch(() => undefined);
    throw err;
  }
}

/**
 * The hash workers' source (CommonJS, run with `eval`), reading the temp file through the fetch's
 * own descriptor (positional reads) as ranges are reported written. Mode "whole": in order, the
 * whole file's SHA-256 once every range was read. Mode "range": each reported range's SHA-256.
 */
const HASH_WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const { readSync } = require("node:fs");
const { mode, fd, rangeBytes, sizeBytes, count, bufferBytes } = workerData;
const buffer = Buffer.allocUnsafe(bufferBytes);
const hashRange = (index, hash) => {
  const end = Math.min((index + 1) * rangeBytes, sizeBytes);
  for (let at = index * rangeBytes; at < end; ) {
    const read = readSync(fd, buffer, 0, Math.min(buffer.length, end - at), at);
    if (read === 0) throw new Error("the temp file ended at " + at);
    hash.update(buffer.subarray(0, read));
    at += read;
  }
  return hash;
};
if (mode === "range") {
  parentPort.on("message", (index) => {
    parentPort.postMessage({ index, sha256: hashRange(index, createHash("sha256")).digest("hex") });
  });
} else {
  const whole = createHash("sha256");
  const written = new Set();
  let next = 0;
  const finishWhenAllHashed = () => {
    if (next !== count) return;
    parentPort.postMessage({ whole: whole.digest("hex") });
    parentPort.close();
  };
  parentPort.on("message", (index) => {
    written.add(index);
    while (written.has(next)) {
      hashRange(next, whole);
      written.delete(next);
      next++;
    }
    finishWhenAllHashed();
  });
  finishWhenAllHashed(); // an empty state has no range to wait for
}
`;

type HashMessage = { index: number; sha256: string } | { whole: string };

/**
 * Worker threads that hash a fetch's temp file behind its downloads: one for the whole file (in
 * order) and, when the manifest has chunk hashes, `rangeWorkers` for the ranges (in parallel).
 */
class FileHasher {
  private readonly workers: Worker[] = [];
  private readonly finished: Promise<string>;

  constructor(
    geometry: { fd: number; rangeBytes: number; sizeBytes: number; count: number },
    rangeWorkers: number,
    onRange: (index: number, sha256: string) => void,
  ) {
    let whole: string | null = null;
    let ranges = 0;
    const expectedRanges = rangeWorkers > 0 ? geometry.count : 0;
    this.finished = new Promise<string>((resolve, reject) => {
      const start = (mode: "whole" | "range") => {
        const worker = new Worker(HASH_WORKER_SOURCE, {
          eval: true,
          workerData: { mode, ...geometry, bufferBytes: WRITE_BATCH_BYTES },
        });
        worker.on("message", (m: HashMessage) => {
          if ("whole" in m) whole = m.whole;
          else {
            onRange(m.index, m.sha256);
            ranges++;
          }
          if (whole !== null && ranges === expectedRanges) resolve(whole);
        });
        worker.once("error", reject);
        worker.once("exit", (code) => {
          // The whole-file worker ends by itself once it posted its digest.
          if (mode === "range" || whole === null)
            reject(new Error(`a hash worker exited (${code}) before the end`));
        });
        this.workers.push(worker);
      };
      start("whole");
      for (let i = 0; i < rangeWorkers; i++) start("range");
    });
    // Awaited only when every range was written; a fetch that fails first never asks.
    this.finished.catch(() => undefined);
  }

  /** Reports range `index` written to the file. */
  done(index: number): void {
    const [whole, ...ranges] = this.workers;
    whole?.postMessage(index);
    ranges[index % Math.max(1, ranges.length)]?.postMessage(index);
  }

  /** The whole file's SHA-256, once it and every range's digest (handed to `onRange`) are in. */
  digest(): Promise<string> {
    return this.finished;
  }

  /** Ends the workers (a failed fetch cuts them short); the caller closes the file after. */
  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
