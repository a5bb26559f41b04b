/**
 * The block service's state path on kvgraft's engine build: restores from the pinned memory tier
 * (warm) or from disk read once into it (cold), deposits saved straight into memory and hashed
 * there, and second hot copies made on the device; the block service reaches it as the arena
 * state path (arena-path.ts). On the npm prebuilt binaries none of this exists and the block
 * service takes the file path (file-path.ts).
 */
import { open } from "node:fs/promises";
import type { LlamaContextSequence } from "node-llama-cpp";
import type { BlockManifest } from "../../../shared/protocol.js";
import {
  type ArenaHandle,
  type ArenaRange,
  copySequence,
  type HashFollower,
  loadSequenceFromMemory,
  type NativeStateApi,
  saveSequenceToMemory,
  stateHeaderBytes,
} from "../../engine/state-memory.js";
import type { FetchGeometry, OpenDestination } from "../bucket/bucket-fetch.js";
import { HASH_CHUNK_BYTES } from "../store/file-hash.js";
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
export interface StagedFetch {
  /** The fetch's destination: the room itself, hashed in place as it fills. */
  readonly destination: OpenDestination;
  /** Makes the bytes the block's warm copy (call only after every hash matched). */
  keep(sha: string): void;
  drop(): void;
}

/** Outcome of a memory-path restore. */
export type MemoryRestore = "warm" | "cold" | "corrupt" | "unavailable";

export class MemoryPath {
  /**
   * The last use queued on each arena range (by offset). A load writes llama.cpp's 8-byte frame
   * into the end of the block's token list for its duration (KvgraftState.cpp), so a second load,
   * the header read that gives a load its tokens, or a file write of the same bytes running
   * meanwhile would see the frame (and a second load would save it as the bytes to put back).
   */
  private readonly rangeUsers = new Map<number, Promise<void>>();

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
      await this.exclusive(lease.range, () => loadSequenceFromMemory(this.api, sequence, lease.range));
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
   * in as it arrives and the addon hashes the filled prefix in place (`ArenaHasher`); `keep`
   * (called only after every hash matched) makes it the block's warm copy. Null when it does not fit beside the blocks in use.
   */
  stageFetch(sizeBytes: number): StagedFetch | null {
    const staged = this.tier.stage(sizeBytes);
    if (!staged) return null;
    return {
      destination: async (geometry, onChunk) => {
        const hasher = new ArenaHasher(
          this.api,
          { arena: staged.arena, offset: staged.offset },
          geometry,
          onChunk,
        );
        return {
          followsPrefix: geometry.whole,
          // Copied in on the thread pool: the main thread only receives.
          write: (offset, bytes) => this.api.copyInAsync(staged.arena, staged.offset + offset, [bytes]),
          advance: (chunk, chunkEnd, prefixEnd) => hasher.advance(chunk, chunkEnd, prefixEnd),
          digest: () => hasher.digest(),
          close: () => hasher.settled(),
        };
      },
      keep: (sha) => staged.keep(sha, sizeBytes).release(),
      drop: () => staged.drop(),
    };
  }

  /**
   * Writes a block's arena bytes to a file in parallel chunks (the block store then fsyncs and
   * renames it). The header (magic, version, token list) is copied first, between loads (see
   * `rangeUsers`); the state after it, which loads only read, is written straight from the arena
   * while the block keeps serving.
   */
  async writeFile(path: string, range: ArenaRange): Promise<void> {
    const header = await this.exclusive(range, async () => {
      const count = this.api.copyOut(range.arena, range.offset, 12).readUInt32LE(8);
      return this.api.copyOut(range.arena, range.offset, Math.min(range.length, stateHeaderBytes(count)));
    });
    const file = await open(path, "w", 0o600);
    try {
      await file.write(header, 0, header.length, 0);
      const { arena, offset, length } = range;
      const pieces = [];
      for (let at = header.length; at < length; at += HASH_CHUNK_BYTES) {
        const bytes = Math.min(HASH_CHUNK_BYTES, length - at);
        pieces.push(this.api.writeChunk(file.fd, arena, offset + at, bytes, at));
      }
      await Promise.all(pieces);
    } finally {
      await file.close();
    }
  }

  /** Loads saved bytes into another sequence (a deposit's verification). */
  load(sequence: LlamaContextSequence, saved: SavedState): Promise<void> {
    return this.exclusive(saved.range, () => loadSequenceFromMemory(this.api, sequence, saved.range));
  }

  /** Copies a resident block from one slot into another on the device. */
  copy(source: LlamaContextSequence, target: LlamaContextSequence): Promise<void> {
    return copySequence(this.api, source, target);
  }

  /** Runs `use` once every earlier use of the range queued here ended (see `rangeUsers`). */
  private exclusive<T>(range: ArenaRange, use: () => Promise<T>): Promise<T> {
    const before = this.rangeUsers.get(range.offset) ?? Promise.resolve();
    const run = before.then(use);
    const done = run.then(
      () => undefined,
      () => undefined,
    );
    this.rangeUsers.set(range.offset, done);
    void done.then(() => {
      if (this.rangeUsers.get(range.offset) === done) this.rangeUsers.delete(range.offset);
    });
    return run;
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

/**
 * Hashes an arena range as a fetch fills it, with the addon's hash followers (threads of the
 * pool that hash a range's filled prefix as JavaScript moves its end, never waiting on the main
 * thread between steps): one per chunk, started when the chunk's first bytes are stored, so a
 * chunk's hash ends right after its last byte; and, when asked for, one for the whole state,
 * whose single SHA-256 stream (~1.3 GB/s a core on the H200's host) is what bounds the fetch then.
 */
class ArenaHasher {
  private readonly whole: Followed | null;
  private readonly chunks: Followed[] = [];
  private prefix = 0;
  /** Chunks told all their bytes. */
  private complete = 0;

  constructor(
    private readonly api: NativeStateApi,
    private readonly base: { arena: ArenaHandle; offset: number },
    private readonly geometry: FetchGeometry,
    private readonly onChunk: (index: number, sha256: string) => void,
  ) {
    this.whole = geometry.whole ? this.follow(0, geometry.sizeBytes) : null;
  }

  advance(chunk: number, chunkEnd: number, prefixEnd: number): void {
    if (this.whole && prefixEnd > this.prefix) this.api.hashAdvance(this.whole.follower, prefixEnd);
    this.prefix = Math.max(this.prefix, prefixEnd);
    const { chunks, chunkBytes, sizeBytes } = this.geometry;
    if (chunk >= chunks) return; // no chunk hashes (an old manifest): the whole one only
    const start = chunk * chunkBytes;
    const length = Math.min(chunkBytes, sizeBytes - start);
    const followed = this.chunks[chunk] ?? this.follow(start, length);
    this.chunks[chunk] = followed;
    this.api.hashAdvance(followed.follower, chunkEnd - start);
    if (chunkEnd - start === length) this.complete++;
  }

  /** The whole state's SHA-256 (null when not asked for) once every byte is hashed. */
  async digest(): Promise<string | null> {
    if (this.prefix !== this.geometry.sizeBytes || this.complete !== this.geometry.chunks)
      throw new Error("the hash ended before the last byte");
    const chunks = await Promise.all(this.chunks.map((c) => c.digest));
    for (const [index, sha] of chunks.entries()) this.onChunk(index, sha);
    return this.whole ? this.whole.digest : null;
  }

  /** Stops the hashing threads and resolves once they ended: the room may be dropped after. */
  async settled(): Promise<void> {
    const chunks = this.chunks.filter((c) => c !== undefined);
    const all = this.whole ? [this.whole, ...chunks] : chunks;
    for (const f of all) this.api.hashCancel(f.follower);
    await Promise.allSettled(all.map((f) => f.digest));
  }

  private follow(start: number, length: number): Followed {
    const followed = this.api.hashFollow(this.base.arena, this.base.offset + start, length);
    // Awaited by digest; a fetch that failed first cancels them instead.
    followed.digest.catch(() => undefined);
    return followed;
  }
}

/** A hash follower of the addon and the digest it resolves to. */
type Followed = { follower: HashFollower; digest: Promise<string> };
