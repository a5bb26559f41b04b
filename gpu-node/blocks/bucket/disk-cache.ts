/**
 * Local disk as a cache of the block bucket: a deposit is uploaded (state, then manifest) before
 * it is answered; a block not on disk is fetched from the bucket, once however many requests
 * wait for it; past the disk budget the least recently used blocks that are safe in the bucket
 * are deleted locally. Without a bucket every block stays and a missing one is a 404.
 *
 * On the engine build a fetched block goes into the warm arena only and is served from there as
 * soon as its hashes matched; writing its file to disk and committing it (fsync, rename,
 * manifest) continues in the background.
 */
import { rm } from "node:fs/promises";
import { createLogger, type Logger } from "../../../shared/http/logger.js";
import type { BlockManifest } from "../../../shared/protocol.js";
import type { ArenaRange } from "../../engine/state-memory.js";
import { notFound } from "../../errors.js";
import type { StagedFetch } from "../state-path/memory-path.js";
import type { MemoryLease } from "../state-path/memory-tier.js";
import { type BlockStore, sha256File } from "../store/block-store.js";
import { type BlockBucket, blockKeys } from "./bucket.js";
import type { FetchTimings } from "./bucket-fetch.js";
import { fileDestination } from "./fetch-file-destination.js";

/** The warm arena of the engine build, which a fetch fills while it downloads. */
export interface WarmFetchTier {
  stageFetch(sizeBytes: number): StagedFetch | null;
  /** The arena's blocks: a fetched block is held there until its file is on disk. */
  readonly tier: {
    has(sha: string): boolean;
    acquire(sha: string): MemoryLease | null;
    remove(sha: string): void;
  };
  /** Writes a block's arena bytes to a file (its disk copy, committed by the store after). */
  writeFile(path: string, range: ArenaRange): Promise<void>;
}

/** Counters of the bucket tier. */
export interface BucketStats {
  uploads: number;
  /** Blocks fetched from the bucket whose every hash matched. */
  fetches: number;
  evictions: number;
  /** Fetched blocks served from the arena whose disk copy then failed (they stay in the bucket only). */
  persistFailures: number;
}

/** The stages of the last fetch from the bucket, in ms from its start (manifest GET included). */
export interface LastFetch extends FetchTimings {
  manifestMs: number;
  /** "arena": the warm arena filled by the fetch; "file": a temp file, committed before serving. */
  into: "arena" | "file";
  /** Whether the whole state's SHA-256 was checked before serving (else: before the disk commit). */
  wholeChecked: boolean;
}

/** A fetched block served from the arena while its file is committed to disk. */
interface Persisting {
  manifest: BlockManifest;
  done: Promise<void>;
}

export class DiskCache {
  /** Fetches from the bucket in flight, so that concurrent grafts of one block fetch it once. */
  private readonly fetches = new Map<string, Promise<BlockManifest>>();
  /** Blocks known to be in the bucket (uploaded or fetched by this process). */
  private readonly durable = new Set<string>();
  /** Last use of each local block, for the disk budget's LRU order. */
  private readonly lastUsed = new Map<string, number>();
  /** Grafts and prefetches reading each block's file now: never evicted under them. */
  private readonly reading = new Map<string, number>();
  /** Fetched blocks served from the arena whose files are being committed, by block. */
  private readonly persisting = new Map<string, Persisting>();
  readonly stats: BucketStats = { uploads: 0, fetches: 0, evictions: 0, persistFailures: 0 };
  /** Stage timings of the last fetch whose hashes all matched (for `bench bucket`). */
  lastFetch: LastFetch | null = null;

  readonly bucket: BlockBucket | null;
  /** Bytes of block files kept locally when there is a bucket. */
  private readonly diskBudgetBytes: number;
  private readonly warm: WarmFetchTier | null;
  private readonly log: Logger;

  constructor(
    private readonly store: BlockStore,
    options: {
      bucket?: BlockBucket | undefined;
      diskBudgetBytes?: number | undefined;
      /** On the engine build: fetched bytes go into the warm arena too, kept once all matched. */
      warm?: WarmFetchTier | null | undefined;
      /** Where a failed background commit of a fetched block is reported; default stderr. */
      log?: Logger | undefined;
    },
    /** Deletes a block from this node (every tier), for eviction. */
    private readonly deleteBlock: (sha: string) => Promise<void>,
  ) {
    this.bucket = options.bucket ?? null;
    this.diskBudgetBytes = options.diskBudgetBytes ?? Number.POSITIVE_INFINITY;
    this.warm = options.warm ?? null;
    this.log = options.log ?? createLogger();
  }

  /**
   * With a bucket, uploads a committed block (state, then manifest) before the deposit is
   * answered; a failed upload fails the deposit with 503 `bucket_unavailable` (the local copy
   * stays, and a later deposit of the same text uploads it).
   */
  async makeDurable(manifest: BlockManifest): Promise<BlockManifest> {
    this.touch(manifest.sha256);
    if (!this.bucket) return manifest;
    await this.bucket.upload(manifest, this.store.statePath(manifest.sha256));
    this.durable.add(manifest.sha256);
    this.stats.uploads++;
    await this.evictOverBudget(manifest.sha256);
    return manifest;
  }

  /**
   * The manifest of a block this node can serve, fetching it from the bucket first when it is
   * not on disk (one fetch per block however many callers wait for it). On the engine build a
   * fetched block is answered as soon as every hash matched: it is in the warm arena, held there
   * until its file is committed. 404 `block_not_found` when neither the node nor the bucket has
   * it; 409 `bucket_block_corrupt` when the bucket's copy fails its hashes.
   */
  async local(blockId: string): Promise<BlockManifest> {
    if (this.store.has(blockId) || !this.bucket) {
      const manifest = this.store.get(blockId);
      this.touch(blockId);
      return manifest;
    }
    const persisting = this.persisting.get(blockId);
    if (persisting) {
      if (this.warm?.tier.has(blockId)) return persisting.manifest;
      // Its arena copy went (dropped by hand) before the file was committed: wait for the file.
      await persisting.done;
      return this.local(blockId);
    }
    let fetching = this.fetches.get(blockId);
    if (!fetching) {
      fetching = this.fetchFromBucket(this.bucket, blockId).finally(() => this.fetches.delete(blockId));
      this.fetches.set(blockId, fetching);
    }
    return fetching;
  }

  /** Fetched blocks served from the arena whose files are still being committed (held here all the same). */
  committing(): BlockManifest[] {
    return [...this.persisting.values()].map((p) => p.manifest);
  }

  /** Resolves once the block's fetched file, if it is being committed now, is committed. */
  async committed(blockId: string): Promise<void> {
    await this.persisting.get(blockId)?.done;
  }

  /** Resolves once no fetched block's file is being committed (before the node shuts down). */
  async settled(): Promise<void> {
    while (this.persisting.size > 0) await Promise.all([...this.persisting.values()].map((p) => p.done));
  }

  private async fetchFromBucket(bucket: BlockBucket, blockId: string): Promise<BlockManifest> {
    const began = performance.now();
    const fetched = await bucket.manifestAt(blockKeys(blockId).manifest, blockId);
    const manifestMs = performance.now() - began;
    if (!fetched) throw notFound("block_not_found", `no block ${blockId} on this node or in the bucket`);
    const { manifest } = fetched;
    // Straight into the warm arena when it has room, so the graft that asked loads from memory
    // and the disk copy is written behind it; else into a temp file that is committed first.
    const staged = this.warm?.stageFetch(manifest.sizeBytes) ?? null;
    const temp = staged ? null : this.store.tempPath("fetch");
    let wholeChecked: boolean;
    try {
      // A manifest a node of this cluster wrote (its tag): its chunk hashes are trusted, so the
      // block is served once every chunk matched; the whole state's SHA-256 is checked before
      // the disk copy is committed.
      const timings = await bucket.download(
        manifest,
        staged?.destination ?? fileDestination(temp as string),
        {
          chunksTrusted: fetched.authenticated,
        },
      );
      wholeChecked = timings.wholeChecked;
      const shift = (ms: number) => manifestMs + ms;
      this.lastFetch = {
        manifestMs,
        firstBytesMs: shift(timings.firstBytesMs),
        allBytesMs: shift(timings.allBytesMs),
        hashedMs: shift(timings.hashedMs),
        into: staged ? "arena" : "file",
        wholeChecked,
      };
    } catch (err) {
      staged?.drop();
      if (temp) await rm(temp, { force: true });
      throw err;
    }
    this.durable.add(blockId);
    this.stats.fetches++;
    this.touch(blockId);
    if (temp) {
      // node-llama-cpp's file path loads from the file: it must be committed first.
      const adopted = await this.commitFetched(temp, manifest);
      await this.evictOverBudget(blockId);
      return adopted;
    }
    (staged as StagedFetch).keep(blockId);
    this.persistInBackground(manifest, this.warm?.tier.acquire(blockId) ?? null, wholeChecked);
    return manifest;
  }

  /** Moves a fetched, hash-checked temp file into the store (fsync, rename, manifest). */
  private async commitFetched(temp: string, manifest: BlockManifest): Promise<BlockManifest> {
    try {
      return await this.store.adopt(temp, manifest);
    } finally {
      await rm(temp, { force: true });
    }
  }

  /**
   * Writes a block being served from the arena to disk behind the graft and commits it, holding
   * its arena copy (never evicted meanwhile). A failure loses only the disk copy: the temp file
   * is deleted, the arena copy dropped (the node lists no block it cannot read back), and the
   * block is fetched again on its next graft.
   */
  private persistInBackground(
    manifest: BlockManifest,
    held: MemoryLease | null,
    wholeChecked: boolean,
  ): void {
    const sha = manifest.sha256;
    const write = async () => {
      if (!held || !this.warm) throw new Error("the fetched block left the arena before its disk copy");
      const temp = this.store.tempPath("fetch");
      try {
        await this.warm.writeFile(temp, held.range);
        if (!wholeChecked && (await sha256File(temp)) !== sha)
          throw new Error("its bytes match every chunk hash of its tagged manifest but not its name");
      } catch (err) {
        await rm(temp, { force: true });
        throw err;
      }
      await this.commitFetched(temp, manifest);
    };
    const done = write()
      .then(
        () => this.evictOverBudget(sha),
        (err: unknown) => {
          this.stats.persistFailures++;
          held?.release();
          held = null;
          this.warm?.tier.remove(sha);
          this.log.error("bucket fetch: the served block's disk copy failed; it stays in the bucket only", {
            block: sha,
            error: err,
          });
        },
      )
      .catch((err: unknown) => {
        this.log.warn("bucket fetch: eviction over the disk budget failed", { block: sha, error: err });
      })
      .finally(() => {
        held?.release();
        this.persisting.delete(sha);
      });
    this.persisting.set(sha, { manifest, done });
  }

  private touch(blockId: string): void {
    this.lastUsed.set(blockId, performance.now());
  }

  /** Runs `use` with the block on local disk and protected from eviction meanwhile. */
  async withLocal<T>(blockId: string, use: (manifest: BlockManifest) => Promise<T>): Promise<T> {
    this.reading.set(blockId, (this.reading.get(blockId) ?? 0) + 1);
    try {
      return await use(await this.local(blockId));
    } finally {
      const left = (this.reading.get(blockId) ?? 1) - 1;
      if (left > 0) this.reading.set(blockId, left);
      else this.reading.delete(blockId);
    }
  }

  /**
   * Deletes least recently used local blocks until the block files fit the disk budget; only
   * blocks that are in the bucket, not `keep`, and not being read. A block whose presence in
   * the bucket cannot be confirmed now is kept.
   */
  private async evictOverBudget(keep: string): Promise<void> {
    if (!this.bucket || this.store.diskUsage() <= this.diskBudgetBytes) return;
    const byAge = this.store
      .list()
      .filter((m) => m.sha256 !== keep && !this.reading.has(m.sha256))
      .sort((a, b) => (this.lastUsed.get(a.sha256) ?? 0) - (this.lastUsed.get(b.sha256) ?? 0));
    for (const m of byAge) {
      if (this.store.diskUsage() <= this.diskBudgetBytes) return;
      const inBucket = this.durable.has(m.sha256) || (await this.bucket.has(m.sha256).catch(() => false));
      if (!inBucket || !this.store.has(m.sha256) || this.reading.has(m.sha256)) continue;
      this.durable.add(m.sha256);
      await this.deleteBlock(m.sha256);
      this.lastUsed.delete(m.sha256);
      this.stats.evictions++;
    }
  }
}
