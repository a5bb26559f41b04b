/**
 * Deposit and graft over the tiers: hot (resident in a slot: erase the tail, ~free), warm (a
 * RAM copy: the arena or tmpfs, as the state path chosen at open keeps it; state-path.ts), cold
 * (the file on disk, hash-checked). Every block is verified when it is made: restored into
 * another slot, its probe must hash like the fresh prefill's; and again after a restore when a
 * graft asks, and on its first restore from a file in a process (`restore/probe-check.ts`).
 * Restoring is restore/restore.ts, decoding slots/generation.ts, imports import/block-import.ts.
 */
import { rm } from "node:fs/promises";
import type { Token } from "node-llama-cpp";
import { manifestFields } from "../../shared/block-manifest.js";
import { sha256Hex, sha256OfTokens } from "../../shared/hash.js";
import type { Logger } from "../../shared/http/logger.js";
import type { BlockManifest, GenerationResult, Tier } from "../../shared/protocol.js";
import type { Engine } from "../engine/engine.js";
import { exactEvaluation } from "../engine/exact-batching.js";
import { evaluateProbe, probeTokenFor } from "../engine/probe.js";
import { assertSameOrigin } from "../engine/state.js";
import { badRequest, conflict, unprocessable } from "../errors.js";
import type { BlockBucket } from "./bucket/bucket.js";
import { type BucketUpload, importFromBucket } from "./bucket/bucket-import.js";
import { DiskCache } from "./bucket/disk-cache.js";
import { BlockImporter } from "./import/block-import.js";
import type { ProbeGate } from "./restore/probe-check.js";
import { Restorer } from "./restore/restore.js";
import { WarmStart } from "./restore/warm-start.js";
import { decode, generationResult, truncate } from "./slots/generation.js";
import { SlotPool } from "./slots/slot-pool.js";
import { openStatePath, type SavedDeposit, type StatePath } from "./state-path/state-path.js";
import { BlockStore, type StoreRecovery } from "./store/block-store.js";
import type { BlockCheck, Blocks, GenerationOptions, TierSnapshot } from "./types.js";

export interface BlockServiceOptions {
  engine: Engine;
  /** Block store root (blocks/, tmp/, quarantine/). */
  dataDir: string;
  /** RAM folder for the file path's warm tier; defaults to a private folder on /dev/shm when present. */
  warmDir?: string;
  /** Warm-tier budget in bytes (0: none): the arena on our engine build, else tmpfs files (state-path.ts). */
  warmBudgetBytes?: number;
  /** Requests that may wait for a slot before a 429. */
  maxWaiting?: number;
  /** The durable tier; with it, local disk is a cache of the bucket (disk-cache.ts). */
  bucket?: BlockBucket;
  /** Bytes of block files kept locally when there is a bucket; default no limit. */
  diskBudgetBytes?: number;
  /** The node's logger, for the disk cache's background commits. */
  log?: Logger;
}

export class BlockService implements Blocks {
  private depositChain: Promise<unknown> = Promise.resolve();
  private readonly depositsInFlight = new Map<string, Promise<BlockManifest>>();
  private readonly restorer: Restorer;
  private readonly importer: BlockImporter;
  /** Local disk as a cache of the bucket (when there is one). */
  readonly disk: DiskCache;
  /** Fills the warm tier from disk after a start (the node begins it once it listens). */
  readonly warmStart: WarmStart;

  private constructor(
    readonly engine: Engine,
    readonly store: BlockStore,
    readonly pool: SlotPool,
    readonly recovery: StoreRecovery,
    /** How state moves between slots, RAM and disk: the arena path or the file path (state-path.ts). */
    readonly state: StatePath,
    options: Pick<BlockServiceOptions, "bucket" | "diskBudgetBytes" | "log">,
  ) {
    this.restorer = new Restorer({ engine, store, pool, state });
    this.disk = new DiskCache(store, { ...options, warm: state.arena }, (sha) => this.delete(sha));
    this.importer = new BlockImporter(engine, store, pool, (sha) => this.probes.markChecked(sha));
    this.warmStart = new WarmStart({
      byRecentUse: () => store.byRecentUse(),
      has: (sha) => store.has(sha),
      isWarm: (sha) => state.tier.has(sha),
      room: () => ({ usedBytes: state.tier.usedBytes, budgetBytes: state.tier.budgetBytes }),
      warmCopy: (manifest) => this.restorer.warmCopy(manifest),
    });
  }

  /** The post-restore probe check and its counters. */
  get probes(): ProbeGate {
    return this.restorer.probes;
  }

  /** Opens the store (recovering from crashes) and the tiers. */
  static async open(options: BlockServiceOptions): Promise<BlockService> {
    const { store, recovery } = await BlockStore.open(options.dataDir);
    const state = await openStatePath({
      api: options.engine.nativeApi,
      store,
      warmBudgetBytes: options.warmBudgetBytes ?? 2 * 2 ** 30,
      warmDir: options.warmDir,
    });
    const pool = new SlotPool(options.engine.slots, options.maxWaiting ?? options.engine.slots.length * 4);
    return new BlockService(options.engine, store, pool, recovery, state, options);
  }

  get durable(): boolean {
    return this.disk.bucket !== null;
  }

  /**
   * The blocks this node holds: its store's, and those fetched from the bucket that it serves from
   * the arena while their files are committed (a graft of one is answered here, so it is listed).
   */
  list(): BlockManifest[] {
    const stored = this.store.list();
    const listed = new Set(stored.map((m) => m.sha256));
    return [...stored, ...this.disk.committing().filter((m) => !listed.has(m.sha256))];
  }

  /** A block's manifest, of the blocks `list()` gives; 404 `block_not_found` for any other. */
  get(blockId: string): BlockManifest {
    const committing = this.disk.committing().find((m) => m.sha256 === blockId);
    return committing ?? this.store.get(blockId);
  }

  /** Deposits text as a block: prefill, save, verify in another slot, then store. */
  deposit(text: string): Promise<BlockManifest> {
    return this.depositTokens(this.engine.tokenize(text), text);
  }

  /** Deposits exact token ids (benchmarks build libraries of exact lengths this way). */
  depositTokens(tokens: Token[], text = this.engine.model.detokenize(tokens)): Promise<BlockManifest> {
    if (tokens.length + 1 > this.engine.options.contextSize)
      throw badRequest(
        "block_too_long",
        `the text is ${tokens.length} tokens; a slot holds ${this.engine.options.contextSize - 1}`,
      );
    const pending = this.depositsInFlight.get(text);
    if (pending) return pending;
    // One deposit at a time: it holds two slots, and two deposits each holding one would deadlock.
    const made = this.depositChain.then(() => this.depositNow(text, tokens));
    this.depositChain = made.catch(() => undefined);
    // The warm copy and the upload run outside the chain: they hold no slot.
    const work = made.then(async (manifest) => {
      await this.keepWarm(manifest);
      return this.disk.makeDurable(manifest);
    });
    this.depositsInFlight.set(text, work);
    return work.finally(() => this.depositsInFlight.delete(text));
  }

  private async depositNow(text: string, tokens: Token[]): Promise<BlockManifest> {
    const tokensSha256 = await sha256OfTokens(tokens);
    // The state bytes depend on which slot computed them, so the same tokens are found by their
    // hash, not by the file's: one block per token sequence under this model and engine.
    const existing = this.store
      .list()
      .find(
        (m) =>
          m.tokensSha256 === tokensSha256 &&
          m.model.sha256 === this.engine.modelFingerprint.sha256 &&
          m.engine.id === this.engine.engineFingerprint.id,
      );
    if (existing) return existing;
    const probe = probeTokenFor(tokensSha256, this.engine.vocabSize);
    const temp = this.store.tempPath("deposit");
    const a = await this.pool.acquire(null);
    let keep: string | null = null;
    let saved: SavedDeposit | null = null;
    try {
      const seqA = a.slot.sequence;
      await seqA.clearHistory();
      await seqA.evaluateWithoutGeneratingNewTokens(tokens, exactEvaluation); // alone in its batch
      saved = await this.state.save(seqA, temp);
      const fresh = await evaluateProbe(seqA, probe, this.engine.vocabSize);
      await truncate(seqA, tokens.length);
      // Verify in another slot; with a single slot, in the same one after clearing it.
      const b = this.pool.slots.length > 1 ? await this.pool.acquire(null) : null;
      const seqB = b ? b.slot.sequence : seqA;
      try {
        await saved.loadInto(seqB);
        const grafted = await evaluateProbe(seqB, probe, this.engine.vocabSize);
        if (grafted.sha256 !== fresh.sha256)
          throw unprocessable(
            "block_unverified",
            "the restored state did not reproduce the fresh prefill's probe hash",
            {
              fresh: fresh.sha256,
              restored: grafted.sha256,
            },
          );
        if (!b) await truncate(seqA, tokens.length);
      } finally {
        if (b) await this.pool.releaseWiped(b);
      }
      const manifest = await this.store.commit(
        temp,
        manifestFields({
          tokenCount: tokens.length,
          tokensSha256,
          textSha256: await sha256Hex(text),
          model: this.engine.modelFingerprint,
          engine: this.engine.engineFingerprint,
          probe: { token: probe, sha256: fresh.sha256 },
        }),
        saved.hashed,
      );
      this.probes.markChecked(manifest.sha256);
      saved.keep();
      saved = null;
      keep = this.engine.canTruncate ? manifest.sha256 : null;
      return manifest;
    } finally {
      saved?.drop();
      await rm(temp, { force: true });
      if (keep) a.release(keep);
      else await this.pool.releaseWiped(a);
    }
  }

  /** Restores a block at its own positions, evaluates the query and decodes. */
  async graft(
    blockId: string,
    query: string,
    options: GenerationOptions & { acceptEngineMismatch?: true; verifyProbe?: boolean },
  ): Promise<GenerationResult> {
    const started = performance.now();
    return this.disk.withLocal(blockId, (manifest) => this.graftLocal(manifest, query, options, started));
  }

  private async graftLocal(
    manifest: BlockManifest,
    query: string,
    options: GenerationOptions & { acceptEngineMismatch?: true; verifyProbe?: boolean },
    started: number,
  ): Promise<GenerationResult> {
    const blockId = manifest.sha256;
    assertSameOrigin(
      this.engine,
      { modelSha256: manifest.model.sha256, engineId: manifest.engine.id },
      options.acceptEngineMismatch ? { acceptEngineMismatch: true } : undefined,
    );
    const queryTokens = this.engine.model.tokenize(query);
    this.assertFits(manifest.tokenCount + queryTokens.length, options.maxTokens);
    const lease = await this.pool.acquire(blockId, options.signal);
    try {
      const tier = await this.restorer.restore(lease, manifest, options.verifyProbe === true);
      const restoreMs = performance.now() - started;
      const result = await decode(this.engine, lease.slot.sequence, queryTokens, options);
      lease.release(this.engine.canTruncate ? blockId : null);
      return generationResult(this.engine, result, {
        blockSha256: blockId,
        tier,
        tokensIn: queryTokens.length,
        restoreMs,
        started,
      });
    } catch (err) {
      await this.pool.releaseWiped(lease);
      throw err;
    }
  }

  /** Plain generation from an empty slot (the solve path when no block applies). */
  async generate(prompt: string, options: GenerationOptions): Promise<GenerationResult> {
    const started = performance.now();
    const tokens = this.engine.tokenize(prompt);
    this.assertFits(tokens.length, options.maxTokens);
    const lease = await this.pool.acquire(null, options.signal);
    try {
      await lease.slot.sequence.clearHistory();
      const result = await decode(this.engine, lease.slot.sequence, tokens, options);
      await lease.slot.sequence.clearHistory();
      lease.release(null);
      return generationResult(this.engine, result, {
        blockSha256: null,
        tier: null,
        tokensIn: tokens.length,
        restoreMs: 0,
        started,
      });
    } catch (err) {
      await this.pool.releaseWiped(lease);
      throw err;
    }
  }

  /** Moves a block up a tier ahead of a request; "cold" only puts it on disk (from the bucket if need be). */
  prefetch(blockId: string, tier: "hot" | "warm" | "cold"): Promise<Tier> {
    return this.disk.withLocal(blockId, async (m) =>
      tier === "cold" ? "cold" : this.prefetchLocal(m, tier),
    );
  }

  private async prefetchLocal(manifest: BlockManifest, tier: "hot" | "warm"): Promise<Tier> {
    const blockId = manifest.sha256;
    if (tier === "warm" || !this.engine.canTruncate) {
      const copied = await this.restorer.warmCopy(manifest);
      if (copied === "corrupt")
        throw conflict("block_corrupt", `block ${blockId} failed its hash check and was quarantined`);
      return copied === "warm" ? "warm" : "cold";
    }
    assertSameOrigin(this.engine, { modelSha256: manifest.model.sha256, engineId: manifest.engine.id });
    const lease = await this.pool.acquire(blockId);
    try {
      await this.restorer.restore(lease, manifest, false);
      lease.release(blockId);
      return "hot";
    } catch (err) {
      await this.pool.releaseWiped(lease);
      throw err;
    }
  }

  /** Re-checks a stored block: restore from disk (hash-checked) and compare the probe hash. */
  async verify(blockId: string): Promise<BlockCheck> {
    const manifest = this.store.get(blockId);
    assertSameOrigin(this.engine, { modelSha256: manifest.model.sha256, engineId: manifest.engine.id });
    return this.restorer.verifyFromDisk(manifest);
  }

  /** Adds a block file built elsewhere after checking its hash, fingerprints and probe. */
  async importFile(tempPath: string, manifest: BlockManifest): Promise<BlockManifest> {
    try {
      const stored = await this.importer.importFile(tempPath, manifest);
      await this.keepWarm(stored);
      return stored;
    } finally {
      await rm(tempPath, { force: true });
    }
  }

  /** Verifies and stores a block an admin uploaded to the bucket (bucket-import.ts). */
  importFromBucket(upload: BucketUpload): Promise<BlockManifest> {
    return importFromBucket(this, upload);
  }

  /**
   * A new block (deposit, import) goes into the warm tier: a deposit on our engine build is there
   * already (saved into the arena), otherwise the file just written is copied, hash-checked.
   */
  private async keepWarm(manifest: BlockManifest): Promise<void> {
    await this.restorer.warmCopy(manifest).catch(() => undefined);
  }

  /** Drops the block's RAM copy (the warm tier), keeping it on disk and in any slot. */
  dropRamCopy(blockId: string): Promise<void> {
    return this.restorer.dropRamCopy(blockId);
  }

  async delete(blockId: string): Promise<void> {
    this.store.get(blockId);
    this.pool.evict(blockId);
    await this.state.drop(blockId);
    await this.store.delete(blockId);
  }

  snapshot(): TierSnapshot {
    const hot = [...new Set(this.pool.hotBlocks())];
    return {
      hot,
      warm: this.state.tier.blocks(),
      coldCount: this.store.list().length,
      bytes: this.store.tierBytes(this.pool.hotBlocks(), this.state.tier.blocks()),
      slots: {
        total: this.pool.slots.length,
        busy: this.pool.busyCount,
        retired: this.pool.retiredCount,
        sizedBy: this.engine.slotSizing.sizedBy,
      },
      queue: { depth: this.pool.queueDepth, capacity: this.pool.maxWaiting },
      hits: { ...this.restorer.stats.hits },
      misses: this.restorer.stats.misses,
      restoreMsSum: { ...this.restorer.stats.restoreMsSum },
      bytesLoaded: { ...this.restorer.stats.bytesLoaded },
      warmBytes: this.state.tier.usedBytes,
      warmBudgetBytes: this.state.tier.budgetBytes,
      warmStart: { ...this.warmStart.status, corrupt: [...this.warmStart.status.corrupt] },
      decode: this.engine.decodeStats.snapshot(),
    };
  }

  /** Waits for fetched blocks' files to be committed, removes the warm tier's RAM folder; not the engine. */
  async close(): Promise<void> {
    await this.disk.settled();
    await this.warmStart.stop();
    await this.state.close();
  }

  private assertFits(promptTokens: number, maxTokens: number): void {
    if (promptTokens + maxTokens > this.engine.options.contextSize)
      throw badRequest(
        "context_overflow",
        `${promptTokens} prompt tokens + ${maxTokens} new tokens exceed the slot's ${this.engine.options.contextSize}`,
      );
  }
}
