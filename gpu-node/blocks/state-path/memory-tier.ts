/**
 * The warm tier of kvgraft's engine build: block bytes in one arena of host memory, page-locked
 * (pinned) on a GPU so a restore is one host-to-device copy at PCIe speed, least-recently-used
 * out first. A cold block is read from disk straight into the arena (O_DIRECT where the arena is
 * aligned) in large parallel reads, each chunk hashed on the thread pool as it lands; it is
 * loaded only after every chunk matched, and stays in the arena as the warm copy. Deposits put
 * their freshly saved bytes here, so nothing is read back from disk.
 */
import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import type { ArenaHandle, ArenaRange, NativeStateApi } from "../../engine/state-memory.js";

/** Arena offsets and sizes are multiples of this, which O_DIRECT needs. */
const ALIGN = 4096;
/** Room for the alignment padding of this many blocks beyond the budget itself. */
const PADDED_BLOCKS = 64;
/** Chunk reads in flight during a cold read. */
const READS_IN_FLIGHT = 8;

const alignUp = (n: number): number => Math.ceil(n / ALIGN) * ALIGN;

interface Entry {
  offset: number;
  bytes: number;
  lastUsed: number;
  /** Users reading the bytes now; a pinned entry is never evicted. */
  users: number;
}

/** A hold on a block's bytes in the arena; release it when the load is done. */
export interface MemoryLease {
  readonly range: ArenaRange;
  release(): void;
}

/** Room reserved in the arena for bytes being made; see MemoryTier.stage. */
export interface StagedBytes {
  readonly arena: ArenaHandle;
  readonly offset: number;
  keep(sha: string, writtenBytes: number): MemoryLease;
  drop(): void;
}

/** What a cold read must match: the file's size and its per-chunk SHA-256s. */
export interface ChunkedHash {
  sizeBytes: number;
  chunkBytes: number;
  chunks: readonly string[];
}

export class MemoryTier {
  private readonly entries = new Map<string, Entry>();
  /** Ranges being filled (a cold read or a deposit) before they become entries. */
  private readonly reserved = new Set<{ offset: number; bytes: number; used: number }>();
  /** Cold reads in flight, by block. */
  private readonly reading = new Map<string, Promise<"read" | "mismatch" | null>>();
  private used = 0;
  private clock = 0;

  private constructor(
    private readonly api: NativeStateApi,
    private readonly arena: ArenaHandle,
    private readonly arenaBytes: number,
    /** Block bytes the tier may hold. */
    readonly budgetBytes: number,
    /** Whether the arena is page-locked host memory of the GPU backend. */
    readonly pinned: boolean,
  ) {}

  /**
   * Allocates the arena: pinned when the backend offers it, else page-aligned memory; a little
   * larger than the budget, for the alignment of each block.
   */
  static open(api: NativeStateApi, budgetBytes: number): MemoryTier {
    const budget = Math.max(1, budgetBytes);
    const { arena, pinned, size } = api.allocArena(alignUp(budget) + PADDED_BLOCKS * ALIGN);
    return new MemoryTier(api, arena, size, budget, pinned);
  }

  get usedBytes(): number {
    return this.used;
  }

  blocks(): string[] {
    return [...this.entries.keys()];
  }

  has(sha: string): boolean {
    return this.entries.has(sha);
  }

  /** The block's bytes, held until released; null when the block is not here. */
  acquire(sha: string): MemoryLease | null {
    const entry = this.entries.get(sha);
    if (!entry) return null;
    entry.lastUsed = ++this.clock;
    entry.users++;
    let released = false;
    return {
      range: { arena: this.arena, offset: entry.offset, length: entry.bytes },
      release: () => {
        if (released) return;
        released = true;
        entry.users--;
      },
    };
  }

  /**
   * Reserves room for bytes made elsewhere (a deposit saves its state straight into `view`);
   * `keep` turns them into the block's warm copy, `drop` frees the room. Null when they do not
   * fit beside the blocks in use.
   */
  stage(bytes: number): StagedBytes | null {
    const range = this.reserve(bytes);
    if (!range) return null;
    return {
      arena: this.arena,
      offset: range.offset,
      keep: (sha, written) => {
        if (this.entries.has(sha)) {
          this.reserved.delete(range);
          return this.acquire(sha) as MemoryLease;
        }
        return this.commit(sha, range, written);
      },
      drop: () => {
        this.reserved.delete(range);
      },
    };
  }

  /**
   * Reads a block file into the arena, checking every chunk's SHA-256 from the bytes read.
   * Resolves to the held bytes, "mismatch" when any chunk or the size differs (nothing is kept),
   * or null when the block cannot fit beside the blocks in use.
   */
  async readChecked(sha: string, path: string, hash: ChunkedHash): Promise<MemoryLease | "mismatch" | null> {
    const existing = this.acquire(sha);
    if (existing) return existing;
    // A read of this block already under way (warm start, another graft): wait for it, not a second read.
    let reading = this.reading.get(sha);
    if (!reading) {
      reading = this.readNew(sha, path, hash).finally(() => this.reading.delete(sha));
      this.reading.set(sha, reading);
    }
    const outcome = await reading;
    return outcome === "read" ? this.acquire(sha) : outcome;
  }

  private async readNew(sha: string, path: string, hash: ChunkedHash): Promise<"read" | "mismatch" | null> {
    const range = this.reserve(hash.sizeBytes);
    if (!range) return null;
    let ok = false;
    try {
      ok = await this.readInto(path, range.offset, hash);
    } finally {
      if (!ok) this.reserved.delete(range);
    }
    if (!ok) return "mismatch";
    this.commit(sha, range, hash.sizeBytes).release();
    return "read";
  }

  /** Drops a block (deleted or quarantined); its space is reused once no one reads it. */
  remove(sha: string): void {
    const entry = this.entries.get(sha);
    if (!entry) return;
    this.entries.delete(sha);
    this.used -= entry.bytes;
  }

  private commit(
    sha: string,
    range: { offset: number; bytes: number; used: number },
    written: number,
  ): MemoryLease {
    this.reserved.delete(range);
    this.entries.set(sha, { offset: range.offset, bytes: written, lastUsed: ++this.clock, users: 0 });
    this.used += written;
    return this.acquire(sha) as MemoryLease;
  }

  /**
   * Finds an aligned hole of `bytes` within the budget, evicting least-recently-used idle blocks
   * until there is one.
   */
  private reserve(bytes: number): { offset: number; bytes: number; used: number } | null {
    const size = alignUp(bytes);
    if (bytes > this.budgetBytes) return null;
    for (;;) {
      let pending = 0;
      for (const r of this.reserved) pending += r.used;
      const offset = this.used + pending + bytes <= this.budgetBytes ? this.findHole(size) : null;
      if (offset !== null) {
        const range = { offset, bytes: size, used: bytes };
        this.reserved.add(range);
        return range;
      }
      const victim = [...this.entries.entries()]
        .filter(([, e]) => e.users === 0)
        .sort((a, b) => a[1].lastUsed - b[1].lastUsed)[0];
      if (!victim) return null;
      this.remove(victim[0]);
    }
  }

  private findHole(size: number): number | null {
    const taken = [
      ...[...this.entries.values()].map((e) => ({ offset: e.offset, bytes: alignUp(e.bytes) })),
      ...this.reserved,
    ].sort((a, b) => a.offset - b.offset);
    let cursor = 0;
    for (const t of taken) {
      if (t.offset - cursor >= size) return cursor;
      cursor = Math.max(cursor, t.offset + t.bytes);
    }
    return this.arenaBytes - cursor >= size ? cursor : null;
  }

  private async readInto(path: string, offset: number, hash: ChunkedHash): Promise<boolean> {
    const expectedChunks = Math.max(1, Math.ceil(hash.sizeBytes / hash.chunkBytes));
    if (hash.chunks.length !== expectedChunks || hash.chunkBytes % ALIGN !== 0) return false;
    let file: FileHandle;
    try {
      file = await this.openForRead(path);
    } catch {
      return false;
    }
    try {
      if ((await file.stat()).size !== hash.sizeBytes) return false;
      let next = 0;
      let ok = true;
      const worker = async (): Promise<void> => {
        while (ok && next < expectedChunks) {
          const i = next++;
          const start = i * hash.chunkBytes;
          const length = Math.min(hash.chunkBytes, hash.sizeBytes - start);
          // Aligned read lengths for O_DIRECT; the range was reserved rounded up.
          const sha = await this.api.readChunk(
            file.fd,
            this.arena,
            offset + start,
            length,
            start,
            alignUp(length),
          );
          if (sha !== hash.chunks[i]) ok = false;
        }
      };
      await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, expectedChunks) }, worker));
      return ok;
    } catch {
      return false;
    } finally {
      await file.close();
    }
  }

  /** O_DIRECT when the arena is page-aligned pinned memory and the file system allows it. */
  private async openForRead(path: string): Promise<FileHandle> {
    if (this.pinned && constants.O_DIRECT !== undefined) {
      try {
        return await open(path, constants.O_RDONLY | constants.O_DIRECT);
      } catch {
        // tmpfs and some others refuse O_DIRECT: read through the page cache instead.
      }
    }
    return open(path, "r");
  }
}
