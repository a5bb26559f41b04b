/**
 * A bucket fetch's destination on the npm prebuilt (no arena): a temp file, hashed by worker
 * threads reading it back through the fetch's own descriptor. Not fsynced here: the block store
 * does when it commits the file.
 */
import { open } from "node:fs/promises";
import { Worker } from "node:worker_threads";
import type { FetchGeometry, OpenDestination } from "./bucket-fetch.js";

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
      followsPrefix: true,
      write: async (offset, bytes) => {
        for (let done = 0; done < bytes.length; ) {
          const { bytesWritten } = await file.write(bytes, done, bytes.length - done, offset + done);
          done += bytesWritten;
        }
      },
      advance: (chunk, chunkEnd, prefixEnd) => hasher.advance(chunk, chunkEnd, prefixEnd),
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
  /** Chunks handed to a worker so far (each once, when all its bytes are stored). */
  private chunksSent = 0;
  /** The end of the stored prefix the whole-file worker was told. */
  private prefixSent = 0;

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

  advance(chunk: number, chunkEnd: number, prefixEnd: number): void {
    if (prefixEnd > this.prefixSent) {
      this.whole.postMessage(prefixEnd);
      this.prefixSent = prefixEnd;
    }
    const { chunks, chunkBytes, sizeBytes } = this.geometry;
    if (chunk < chunks && chunkEnd === Math.min((chunk + 1) * chunkBytes, sizeBytes)) {
      this.chunkWorkers[this.chunksSent % this.chunkWorkers.length]?.postMessage(chunk);
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
