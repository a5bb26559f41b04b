/**
 * Fetching a block's state from the bucket with several ranged GETs at once, one per hash chunk
 * of the manifest: each range is hashed as its bytes arrive and written at its offset in the
 * temp file (and, on the engine build, copied into the warm arena as well). The whole-file
 * SHA-256, which binds the manifest's chunk hashes to the block's name, is computed in order
 * from the file behind the downloads. The first range that fails stops the others. The file is
 * not fsynced here: the block store fsyncs it when it commits it (`BlockStore.adopt`).
 */
import { createHash, type Hash } from "node:crypto";
import { type FileHandle, open } from "node:fs/promises";
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
  const file = await open(destPath, "w+", 0o644);
  const whole = new InOrderHash(file, rangeBytes, manifest.sizeBytes);
  let next = 0;
  let failure: unknown = null;
  const worker = async (): Promise<void> => {
    while (failure === null && next < count) {
      const index = next++;
      try {
        const digest = await fetchRange(
          get,
          index,
          rangeBytes,
          manifest.sizeBytes,
          file,
          options,
          abort.signal,
        );
        const expected = manifest.chunks?.sha256[index];
        if (expected !== undefined && digest !== expected) throw faults.corrupt(`chunk ${index} differs`);
        whole.done(index);
      } catch (err) {
        if (failure === null) failure = err;
        abort.abort();
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(options.parallel, count)) }, worker));
    if (failure !== null) throw failure;
    if ((await whole.digest(count)) !== manifest.sha256) throw faults.corrupt("the file's SHA-256 differs");
  } finally {
    await whole.settled();
    await file.close();
  }
}

/** One ranged GET: streamed into the file (batched writes) and `target`; resolves to its SHA-256. */
async function fetchRange(
  get: RangedGet,
  index: number,
  rangeBytes: number,
  sizeBytes: number,
  file: FileHandle,
  options: { target?: FetchTarget | undefined; faults: FetchFaults },
  signal: AbortSignal,
): Promise<string> {
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
  const hash = createHash("sha256");
  const reader = res.body.getReader();
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
        chunk = await reader.read();
      } catch (err) {
        throw faults.down("GET state body", err);
      }
      if (chunk.done) break;
      const bytes = chunk.value;
      if (received + bytes.length > length) throw faults.corrupt(`range ${index} is longer than asked`);
      hash.update(bytes);
      target?.write(start + received, bytes);
      received += bytes.length;
      batch.push(bytes);
      batchBytes += bytes.length;
      if (batchBytes >= WRITE_BATCH_BYTES) await flush();
    }
    if (received !== length) throw faults.corrupt(`range ${index} ended at ${received} of ${length} bytes`);
    await flush();
    return hash.digest("hex");
  } catch (err) {
    await reader.cancel().catch(() => undefined);
    throw err;
  }
}

/**
 * The whole file's SHA-256, fed in order from the file as ranges complete (out of order), so
 * it runs behind the downloads instead of after them.
 */
class InOrderHash {
  private readonly hash: Hash = createHash("sha256");
  private readonly finished = new Set<number>();
  private nextIndex = 0;
  private pumping: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private readonly buffer = Buffer.allocUnsafe(WRITE_BATCH_BYTES);

  constructor(
    private readonly file: FileHandle,
    private readonly rangeBytes: number,
    private readonly sizeBytes: number,
  ) {}

  done(index: number): void {
    this.finished.add(index);
    this.pumping = this.pumping
      .then(() => (this.failure === null ? this.pump() : undefined))
      .catch((err: unknown) => {
        this.failure = err;
      });
  }

  /** Resolves once no read of the file is in progress (before the file is closed). */
  settled(): Promise<void> {
    return this.pumping;
  }

  async digest(count: number): Promise<string> {
    await this.pumping;
    if (this.failure !== null) throw this.failure;
    if (this.nextIndex !== count) throw new Error(`hashed ${this.nextIndex} of ${count} ranges`);
    return this.hash.digest("hex");
  }

  private async pump(): Promise<void> {
    while (this.finished.has(this.nextIndex)) {
      const start = this.nextIndex * this.rangeBytes;
      const end = Math.min(start + this.rangeBytes, this.sizeBytes);
      for (let at = start; at < end; ) {
        const { bytesRead } = await this.file.read(
          this.buffer,
          0,
          Math.min(this.buffer.length, end - at),
          at,
        );
        if (bytesRead === 0) throw new Error(`temp file ended at ${at}`);
        this.hash.update(this.buffer.subarray(0, bytesRead));
        at += bytesRead;
      }
      this.finished.delete(this.nextIndex);
      this.nextIndex++;
    }
  }
}
