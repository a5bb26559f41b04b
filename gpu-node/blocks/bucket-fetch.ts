/**
 * Fetching a block's state from the bucket with several ranged GETs at once. The state is cut
 * into pieces (at most 8 MiB) handed out in offset order to the connections, so the prefix of
 * bytes received without a gap grows steadily; the destination hashes that prefix as it grows:
 * the whole file's SHA-256 (which binds the manifest's chunk hashes to the block's name) and each
 * chunk's (checked against the manifest). The hashing runs off the thread that receives the
 * bytes and keeps pace with them, so little of it is left when the last byte arrives. The first
 * piece that fails (or, on the file path, chunk that differs) stops the rest.
 *
 * Two destinations: a temp file hashed by worker threads reading it back (`fileDestination`;
 * not fsynced here, the block store does when it commits it), and on the engine build the warm
 * arena, hashed in place by the addon (`MemoryPath.stageFetch`).
 */
import { open } from "node:fs/promises";
import { Worker } from "node:worker_threads";
import { conflict } from "../../shared/errors.js";
import type { BlockManifest } from "../../shared/protocol.js";
import type { BulkResponse } from "./http-connection.js";

/** Chunk size when a manifest has no chunk hashes (blocks from before they existed). */
const DEFAULT_CHUNK_BYTES = 64 * 2 ** 20;
/** Largest piece one GET asks for: small enough that the gap-free prefix grows evenly. */
const PIECE_BYTES = 8 * 2 ** 20;
/** The hashing moves on once the gap-free prefix grew by this much, or a piece (or reached the end). */
const ADVANCE_BYTES = 2 * 2 ** 20;
/**
 * Ranged GETs in flight when the configuration names no number: in three rounds on the H200
 * (s3rver on loopback, a 313 MiB block) 4 served it at 0.74-0.82x of the local cold restore and
 * 8 at 0.68-0.85x (docs/deploy-r2.md).
 */
export const DEFAULT_FETCH_PARALLEL = 4;

/** The layout of the state being fetched. */
export interface FetchGeometry {
  sizeBytes: number;
  chunkBytes: number;
  /** Chunks whose SHA-256 the destination computes (0 when the manifest lists none). */
  chunks: number;
  /** Whether the whole state's SHA-256 is needed now (a destination may compute it anyway). */
  whole: boolean;
}

/** Where a fetch puts the bytes; it hashes the written prefix as it grows. */
export interface FetchDestination {
  /**
   * Stores `bytes` (a received slab, up to 1 MiB, reused once the promise settled) at `offset`;
   * several run at once, each one's bytes reported stored after the earlier ones'.
   */
  write(offset: number, bytes: Buffer): Promise<void>;
  /** Every byte before `end` is stored: hash on up to it (`end` only grows). */
  advance(end: number): void;
  /**
   * Once advanced to the end: the whole state's SHA-256, or null when it was not asked for and not
   * computed (each chunk's went to `onChunk` on the way).
   */
  digest(): Promise<string | null>;
  /** Stops the hashing (cut short when the fetch failed) and releases what it holds. */
  close(): Promise<void>;
}

/** Opens a destination; it reports each chunk's SHA-256 to `onChunk` as soon as it has it. */
export type OpenDestination = (
  geometry: FetchGeometry,
  onChunk: (index: number, sha256: string) => void,
) => Promise<FetchDestination>;

/** When a fetch's stages ended, in ms from its first GET: for benchmarks (`bench bucket`). */
export interface FetchTimings {
  /** The first body bytes stored. */
  firstBytesMs: number;
  /** Every byte stored. */
  allBytesMs: number;
  /** Every hash computed and checked. */
  hashedMs: number;
}

/** A signed GET of the block's state object for `bytes=start-end` (inclusive). */
export type RangedGet = (start: number, end: number, signal: AbortSignal) => Promise<BulkResponse>;

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
 * Downloads the state of `manifest` into the destination `openDestination` makes, with
 * `parallel` ranged GETs. Resolves (with its stages' timings) once every chunk's SHA-256 matched
 * the manifest, the total length matched and the whole state hashed to the block's name (unless
 * `chunksTrusted` and the destination left that to the caller: `wholeChecked` false); otherwise
 * throws (the caller discards what the destination holds).
 */
export async function fetchRanges(
  get: RangedGet,
  manifest: BlockManifest,
  openDestination: OpenDestination,
  options: { parallel: number; faults: FetchFaults; chunksTrusted?: boolean },
): Promise<FetchTimings & { wholeChecked: boolean }> {
  const { faults } = options;
  const began = performance.now();
  let firstBytesMs = -1;
  const size = manifest.sizeBytes;
  const chunkBytes = manifest.chunks?.bytes ?? DEFAULT_CHUNK_BYTES;
  const chunkCount = Math.max(1, Math.ceil(size / chunkBytes));
  if (manifest.chunks && manifest.chunks.sha256.length !== chunkCount)
    throw faults.corrupt("its manifest's chunk list does not match its size");
  const pieceBytes = Math.min(PIECE_BYTES, chunkBytes);
  const advanceBytes = Math.min(ADVANCE_BYTES, pieceBytes);
  const pieces = Math.ceil(size / pieceBytes);
  const abort = new AbortController();
  let failure: unknown = null;
  const fail = (err: unknown) => {
    if (failure === null) failure = err;
    abort.abort();
  };
  const dest = await openDestination(
    {
      sizeBytes: size,
      chunkBytes,
      chunks: manifest.chunks ? chunkCount : 0,
      whole: !(options.chunksTrusted && manifest.chunks),
    },
    (index, digest) => {
      if (digest !== manifest.chunks?.sha256[index]) fail(faults.corrupt(`chunk ${index} differs`));
    },
  );
  // The gap-free prefix: pieces before `whole` are all stored, and `stored[whole]` bytes of that one.
  const stored = new Array<number>(pieces).fill(0);
  let whole = 0;
  let advanced = 0;
  const onStored = (piece: number, bytes: number) => {
    if (firstBytesMs < 0) firstBytesMs = performance.now() - began;
    stored[piece] = bytes;
    while (whole < pieces && stored[whole] === Math.min(pieceBytes, size - whole * pieceBytes)) whole++;
    const end = whole < pieces ? whole * pieceBytes + (stored[whole] ?? 0) : size;
    if (end > advanced && (end - advanced >= advanceBytes || end === size)) {
      dest.advance(end);
      advanced = end;
    }
  };
  let next = 0;
  const connection = async (): Promise<void> => {
    while (failure === null && next < pieces) {
      const piece = next++;
      try {
        await fetchPiece(get, piece, pieceBytes, size, dest, faults, abort.signal, (bytes) =>
          onStored(piece, bytes),
        );
      } catch (err) {
        fail(err);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(options.parallel, pieces)) }, connection));
    if (failure !== null) throw failure;
    const allBytesMs = performance.now() - began;
    const digest = await dest.digest();
    // The last chunks' digests arrive behind the downloads.
    if (failure !== null) throw failure;
    if (digest !== null && digest !== manifest.sha256) throw faults.corrupt("the file's SHA-256 differs");
    return { firstBytesMs, allBytesMs, hashedMs: performance.now() - began, wholeChecked: digest !== null };
  } finally {
    await dest.close();
  }
}

/** One ranged GET: streamed into the destination; `onStored` gets the piece's bytes stored so far. */
async function fetchPiece(
  get: RangedGet,
  index: number,
  pieceBytes: number,
  sizeBytes: number,
  dest: FetchDestination,
  faults: FetchFaults,
  signal: AbortSignal,
  onStored: (bytes: number) => void,
): Promise<void> {
  const start = index * pieceBytes;
  const length = Math.min(pieceBytes, sizeBytes - start);
  let res: BulkResponse;
  try {
    res = await get(start, start + length - 1, signal);
  } catch (err) {
    throw faults.down("GET state range", err);
  }
  if (res.status === 404 || res.status === 416) {
    res.discard();
    throw res.status === 404
      ? faults.corrupt("the manifest is there but the state object is not")
      : faults.corrupt(`shorter than the ${sizeBytes} bytes its manifest says`);
  }
  // A 200 (the whole object) is a valid answer only when the range is the whole object.
  if (res.status !== 206 && !(res.status === 200 && length === sizeBytes)) {
    res.discard();
    throw faults.down("GET state range", `status ${res.status}`);
  }
  // The object's total length, from Content-Range: a longer or shorter object is refused at once.
  const total = res.status === 206 ? Number(/\/(\d+)$/.exec(res.header("content-range") ?? "")?.[1]) : NaN;
  const objectBytes = res.status === 206 ? total : res.bodyBytes;
  if (objectBytes !== sizeBytes) {
    res.discard();
    throw faults.corrupt(`the state object is ${objectBytes} bytes, its manifest says ${sizeBytes}`);
  }
  if (res.bodyBytes !== length) {
    res.discard();
    throw faults.corrupt(`range ${index} is ${res.bodyBytes} bytes, ${length} were asked for`);
  }
  let received = 0;
  // A write's failure: reported as it is, not as a network fault.
  let refusal: unknown = null;
  // Each write's bytes are reported stored after the earlier ones'.
  let inOrder: Promise<void> = Promise.resolve();
  try {
    await res.consume((bytes) => {
      const at = start + received;
      received += bytes.length;
      const end = received;
      const storing = dest.write(at, bytes);
      inOrder = inOrder.then(() => storing).then(() => onStored(end));
      inOrder.catch(() => undefined); // seen below
      return storing.catch((err: unknown) => {
        refusal ??= err;
        throw err;
      });
    });
  } catch (err) {
    throw refusal ?? faults.down("GET state body", err);
  } finally {
    // Never return with a write still using room the caller may free after a failure.
    await inOrder.catch(() => undefined);
  }
}

/**
 * A temp file at `path` (created) as a fetch's destination, hashed by worker threads reading it
 * back through the fetch's own descriptor: one follows the stored prefix for the whole file's
 * SHA-256, the others hash each chunk once it is stored.
 */
export function fileDestination(path: string): OpenDestination {
  return async (geometry, onChunk) => {
    const file = await open(path, "w+", 0o644);
    const hasher = new FileHasher(file.fd, geometry, onChunk);
    return {
      write: async (offset, bytes) => {
        for (let done = 0; done < bytes.length; ) {
          const { bytesWritten } = await file.write(bytes, done, bytes.length - done, offset + done);
          done += bytesWritten;
        }
      },
      advance: (end) => hasher.advance(end),
      digest: () => hasher.digest(),
      close: async () => {
        await hasher.stop();
        await file.close();
      },
    };
  };
}

/**
 * The hash workers' source (CommonJS, run with `eval`), reading the temp file with positional
 * reads. Mode "whole": each message is a new end of the stored prefix; hashes on up to it, and
 * posts the digest once at the end. Mode "chunk": each message is a stored chunk to hash.
 */
const HASH_WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const { readSync } = require("node:fs");
const { mode, fd, chunkBytes, sizeBytes, bufferBytes } = workerData;
const buffer = Buffer.allocUnsafe(bufferBytes);
const hashBytes = (hash, from, to) => {
  for (let at = from; at < to; ) {
    const read = readSync(fd, buffer, 0, Math.min(buffer.length, to - at), at);
    if (read === 0) throw new Error("the temp file ended at " + at);
    hash.update(buffer.subarray(0, read));
    at += read;
  }
};
if (mode === "chunk") {
  parentPort.on("message", (index) => {
    const hash = createHash("sha256");
    hashBytes(hash, index * chunkBytes, Math.min((index + 1) * chunkBytes, sizeBytes));
    parentPort.postMessage({ index, sha256: hash.digest("hex") });
  });
} else {
  const whole = createHash("sha256");
  let at = 0;
  parentPort.on("message", (end) => {
    hashBytes(whole, at, end);
    at = end;
    if (at !== sizeBytes) return;
    parentPort.postMessage({ whole: whole.digest("hex") });
    parentPort.close();
  });
}
`;

/** Bytes a hash worker reads at a time. */
const HASH_READ_BYTES = 8 * 2 ** 20;

type HashMessage = { index: number; sha256: string } | { whole: string };

/** Chunk-hashing workers beside the whole-file one (they read the page cache, not the disk). */
const CHUNK_WORKERS = 4;

/** Worker threads that hash a fetch's temp file behind its downloads. */
class FileHasher {
  private readonly whole: Worker;
  private readonly chunkWorkers: Worker[] = [];
  private readonly finished: Promise<string>;
  /** Chunks handed to a worker so far (in order). */
  private chunksSent = 0;

  constructor(
    fd: number,
    private readonly geometry: FetchGeometry,
    onChunk: (index: number, sha256: string) => void,
  ) {
    let digest: string | null = null;
    let chunks = 0;
    const start = (mode: "whole" | "chunk") =>
      new Worker(HASH_WORKER_SOURCE, {
        eval: true,
        workerData: { mode, fd, ...geometry, bufferBytes: HASH_READ_BYTES },
      });
    this.whole = start("whole");
    for (let i = 0; i < Math.min(CHUNK_WORKERS, geometry.chunks); i++) this.chunkWorkers.push(start("chunk"));
    this.finished = new Promise<string>((resolve, reject) => {
      const settleIfDone = () => {
        if (digest !== null && chunks === geometry.chunks) resolve(digest);
      };
      for (const worker of [this.whole, ...this.chunkWorkers]) {
        worker.on("message", (m: HashMessage) => {
          if ("whole" in m) digest = m.whole;
          else {
            onChunk(m.index, m.sha256);
            chunks++;
          }
          settleIfDone();
        });
        worker.once("error", reject);
        worker.once("exit", (code) => {
          // The whole-file worker ends by itself once it posted its digest.
          if (worker !== this.whole || digest === null)
            reject(new Error(`a hash worker exited (${code}) before the end`));
        });
      }
    });
    // Awaited only when every byte was stored; a fetch that fails first never asks.
    this.finished.catch(() => undefined);
  }

  advance(end: number): void {
    this.whole.postMessage(end);
    const { chunks, chunkBytes, sizeBytes } = this.geometry;
    while (this.chunksSent < chunks && Math.min((this.chunksSent + 1) * chunkBytes, sizeBytes) <= end) {
      this.chunkWorkers[this.chunksSent % this.chunkWorkers.length]?.postMessage(this.chunksSent);
      this.chunksSent++;
    }
  }

  digest(): Promise<string> {
    return this.finished;
  }

  async stop(): Promise<void> {
    await Promise.all([this.whole, ...this.chunkWorkers].map((w) => w.terminate()));
  }
}
