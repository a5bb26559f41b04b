/**
 * The block service's state path on kvgraft's engine build: restores from the pinned memory tier
 * (warm) or from disk read once into it (cold), deposits saved straight into memory and hashed
 * there, and second hot copies made on the device. On the npm prebuilt binaries none of this
 * exists and the block service keeps node-llama-cpp's file path.
 */
import { open } from "node:fs/promises";
import type { LlamaContextSequence } from "node-llama-cpp";
import type { BlockManifest } from "../../shared/protocol.js";
import {
  type ArenaRange,
  copySequence,
  loadSequenceFromMemory,
  type NativeStateApi,
  saveSequenceToMemory,
} from "../engine/state-memory.js";
import type { FetchTarget } from "./bucket-fetch.js";
import { HASH_CHUNK_BYTES } from "./file-hash.js";
import { type MemoryLease, MemoryTier, type StagedBytes } from "./memory-tier.js";

/** A deposit's state bytes, saved into memory and hashed there. */
export interface SavedState {
  range: ArenaRange;
  sha256: string;
  chunks: string[];
  /** Keeps the bytes as the block's warm copy (when they were saved into the arena). */
  keep(): void;
  /** Frees the bytes without keeping them. */
  drop(): void;
}

/** Arena room a bucket fetch writes into; see MemoryPath.stageFetch. */
export interface StagedFetch extends FetchTarget {
  keep(sha: string): void;
  drop(): void;
}

/** Outcome of a memory-path restore. */
export type MemoryRestore = "warm" | "cold" | "corrupt" | "unavailable";

export class MemoryPath {
  constructor(
    readonly api: NativeStateApi,
    readonly tier: MemoryTier,
  ) {}

  /** The path when the engine build has it; the warm budget becomes the arena's size. */
  static open(api: NativeStateApi | null, warmBudgetBytes: number): MemoryPath | null {
    return api ? new MemoryPath(api, MemoryTier.open(api, warmBudgetBytes)) : null;
  }

  /**
   * Puts the block into the sequence from memory, reading it from `path` first when it is not
   * there (every chunk checked before the load). "corrupt": a chunk differed, nothing was
   * loaded; "unavailable": it does not fit in memory or its manifest has no chunk hashes.
   */
  async restore(
    sequence: LlamaContextSequence,
    manifest: BlockManifest,
    path: string,
  ): Promise<MemoryRestore> {
    let lease = this.tier.acquire(manifest.sha256);
    let tier: MemoryRestore = "warm";
    if (!lease) {
      const read = await this.read(manifest, path);
      if (read === "mismatch" || read === null) return read === null ? "unavailable" : "corrupt";
      lease = read;
      tier = "cold";
    }
    try {
      await loadSequenceFromMemory(this.api, sequence, lease.range);
    } finally {
      lease.release();
    }
    return tier;
  }

  /** Reads a block into memory ahead of a request: "corrupt" when a chunk differs, "unavailable" when it does not fit. */
  async prefetch(manifest: BlockManifest, path: string): Promise<"warm" | "corrupt" | "unavailable"> {
    if (this.tier.has(manifest.sha256)) return "warm";
    const read = await this.read(manifest, path);
    if (read === "mismatch") return "corrupt";
    if (read === null) return "unavailable";
    read.release();
    return "warm";
  }

  /**
   * Saves the sequence's state into memory (the arena when it fits) and hashes it there: the
   * whole-file SHA-256 and the per-chunk ones, in parallel on the thread pool.
   */
  async save(sequence: LlamaContextSequence): Promise<SavedState> {
    let staged: StagedBytes | null = null;
    const range = await saveSequenceToMemory(this.api, sequence, (size) => {
      staged = this.tier.stage(size);
      // Too large for the tier beside the blocks in use: a one-off arena of its own.
      return staged ?? { arena: this.api.allocArena(size).arena, offset: 0 };
    });
    const stagedBytes = staged as StagedBytes | null;
    try {
      const chunkCount = Math.max(1, Math.ceil(range.length / HASH_CHUNK_BYTES));
      const [sha256, ...chunks] = await Promise.all([
        this.api.hashRange(range.arena, range.offset, range.length),
        ...Array.from({ length: chunkCount }, (_, i) => {
          const start = i * HASH_CHUNK_BYTES;
          return this.api.hashRange(
            range.arena,
            range.offset + start,
            Math.min(HASH_CHUNK_BYTES, range.length - start),
          );
        }),
      ]);
      return {
        range,
        sha256: sha256 as string,
        chunks,
        keep: () => stagedBytes?.keep(sha256 as string, range.length).release(),
        drop: () => stagedBytes?.drop(),
      };
    } catch (err) {
      stagedBytes?.drop();
      throw err;
    }
  }

  /**
   * Room in the arena for a block being fetched from the bucket: the download copies each byte
   * in as it arrives; `keep` (called only after every chunk and the whole file matched) makes it
   * the block's warm copy. Null when it does not fit beside the blocks in use.
   */
  stageFetch(sizeBytes: number): StagedFetch | null {
    const staged = this.tier.stage(sizeBytes);
    if (!staged) return null;
    return {
      write: (offset, bytes) =>
        this.api.copyIn(
          staged.arena,
          staged.offset + offset,
          Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        ),
      keep: (sha) => staged.keep(sha, sizeBytes).release(),
      drop: () => staged.drop(),
    };
  }

  /** Writes saved bytes to a file in parallel chunks (the block store then fsyncs and renames it). */
  async writeFile(path: string, saved: SavedState): Promise<void> {
    const file = await open(path, "w", 0o600);
    try {
      const { arena, offset, length } = saved.range;
      const chunks = Math.max(1, Math.ceil(length / HASH_CHUNK_BYTES));
      await Promise.all(
        Array.from({ length: chunks }, (_, i) => {
          const start = i * HASH_CHUNK_BYTES;
          return this.api.writeChunk(
            file.fd,
            arena,
            offset + start,
            Math.min(HASH_CHUNK_BYTES, length - start),
            start,
          );
        }),
      );
    } finally {
      await file.close();
    }
  }

  /** Loads saved bytes into another sequence (a deposit's verification). */
  load(sequence: LlamaContextSequence, saved: SavedState): Promise<void> {
    return loadSequenceFromMemory(this.api, sequence, saved.range);
  }

  /** Copies a resident block from one slot into another on the device. */
  copy(source: LlamaContextSequence, target: LlamaContextSequence): Promise<void> {
    return copySequence(this.api, source, target);
  }

  private read(manifest: BlockManifest, path: string): Promise<MemoryLease | "mismatch" | null> {
    if (!manifest.chunks) return Promise.resolve(null);
    return this.tier.readChecked(manifest.sha256, path, {
      sizeBytes: manifest.sizeBytes,
      chunkBytes: manifest.chunks.bytes,
      chunks: manifest.chunks.sha256,
    });
  }
}
