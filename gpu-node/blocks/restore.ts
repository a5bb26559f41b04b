/**
 * Restoring a block into a leased slot from the best tier: hot (the slot holds it: erase the
 * tail), another slot holding it (device copy), warm (RAM: pinned memory or tmpfs), cold (the file
 * on disk, hash-checked). The probe is checked where `probe-check.ts` says, and always under an
 * accepted engine mismatch. A block that fails a hash or probe check is forgotten in every tier
 * and its files quarantined. Counts hits, misses, restore time and bytes by tier.
 */
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { conflict, DomainError } from "../../shared/errors.js";
import type { BlockManifest, Tier } from "../../shared/protocol.js";
import type { Engine } from "../engine/engine.js";
import { evaluateProbe } from "../engine/probe.js";
import { loadSequenceState } from "../engine/state.js";
import type { BlockStore } from "./block-store.js";
import { truncate } from "./generation.js";
import type { MemoryPath } from "./memory-path.js";
import { ProbeGate } from "./probe-check.js";
import type { SlotLease, SlotPool } from "./slot-pool.js";
import type { BlockCheck } from "./types.js";
import type { WarmCopy, WarmTier } from "./warm-tier.js";

const zeroTiers = (): Record<Tier, number> => ({ hot: 0, warm: 0, cold: 0 });

/** Restore counters by tier, as the metrics report them. */
export interface RestoreStats {
  hits: Record<Tier, number>;
  restoreMsSum: Record<Tier, number>;
  bytesLoaded: Record<Tier, number>;
  misses: number;
}

/** The tiers a restore reads from. */
export interface RestoreTiers {
  engine: Engine;
  store: BlockStore;
  warm: WarmTier;
  pool: SlotPool;
  /** The in-memory state path of our engine build; null on the npm prebuilt binaries. */
  memory: MemoryPath | null;
}

export class Restorer {
  readonly stats: RestoreStats = {
    hits: zeroTiers(),
    restoreMsSum: zeroTiers(),
    bytesLoaded: zeroTiers(),
    misses: 0,
  };
  /** The post-restore probe check and its counters. */
  readonly probes: ProbeGate;

  constructor(private readonly tiers: RestoreTiers) {
    this.probes = new ProbeGate(tiers.engine.vocabSize, (sha) => this.forget(sha));
  }

  /**
   * Puts the block at [0, n) in the leased slot from the best tier; returns the tier used. The
   * probe is checked when `verifyProbe`, on the block's first restore from a file in this
   * process, and always under an accepted engine mismatch.
   */
  async restore(lease: SlotLease, manifest: BlockManifest, verifyProbe: boolean): Promise<Tier> {
    const { engine } = this.tiers;
    const seq = lease.slot.sequence;
    const started = performance.now();
    const otherEngine = manifest.engine.id !== engine.engineFingerprint.id;
    let tier: Tier;
    let coldPath: string | null = null;
    if (lease.hot) {
      await truncate(seq, manifest.tokenCount);
      tier = "hot";
    } else {
      this.stats.misses++;
      const fromMemory = await this.restoreFromMemory(lease, manifest, otherEngine);
      if (fromMemory) tier = fromMemory;
      else ({ tier, coldPath } = await this.restoreFromFile(seq, manifest, otherEngine));
      this.stats.bytesLoaded[tier] += tier === "hot" ? 0 : manifest.sizeBytes;
    }
    if (seq.nextTokenIndex !== manifest.tokenCount)
      throw new Error(`restored ${seq.nextTokenIndex} tokens, the manifest says ${manifest.tokenCount}`);
    if (otherEngine) {
      const probe = await evaluateProbe(seq, manifest.probe.token as Token, engine.vocabSize);
      await truncate(seq, manifest.tokenCount);
      if (probe.sha256 !== manifest.probe.sha256)
        throw conflict(
          "probe_mismatch",
          "the block loaded under a different engine does not reproduce its probe hash",
        );
    } else if (this.probes.needed(manifest.sha256, tier, verifyProbe)) await this.probes.check(seq, manifest);
    // Only a block that passed its checks gets a RAM copy.
    if (coldPath) void this.tiers.warm.add(manifest.sha256, coldPath, manifest.sizeBytes);
    this.tiers.store.touch(manifest.sha256);
    this.stats.hits[tier]++;
    this.stats.restoreMsSum[tier] += performance.now() - started;
    return tier;
  }

  /**
   * Re-checks a stored block: restores it from disk (hash-checked) into a free slot and compares
   * its probe hash; a block that passes stays resident there on engines that can truncate.
   */
  async verifyFromDisk(manifest: BlockManifest): Promise<BlockCheck> {
    const { engine, pool } = this.tiers;
    const blockId = manifest.sha256;
    const lease = await pool.acquire(null);
    let keep: string | null = null;
    try {
      const started = performance.now();
      await loadSequenceState(lease.slot.sequence, await this.checkedPath(blockId));
      const restoreMs = performance.now() - started;
      const probe = await evaluateProbe(lease.slot.sequence, manifest.probe.token as Token, engine.vocabSize);
      await truncate(lease.slot.sequence, manifest.tokenCount);
      const ok = probe.sha256 === manifest.probe.sha256;
      if (ok) this.probes.markChecked(blockId);
      if (ok && engine.canTruncate) keep = blockId;
      return {
        blockSha256: blockId,
        ok,
        expectedProbeSha256: manifest.probe.sha256,
        probeSha256: probe.sha256,
        tier: "cold",
        restoreMs,
      };
    } finally {
      if (keep) lease.release(keep);
      else await pool.releaseWiped(lease);
    }
  }

  /** Forgets a block in every tier and quarantines its files (a failed hash or probe check). */
  async forget(sha: string): Promise<void> {
    this.tiers.pool.evict(sha);
    this.tiers.memory?.tier.remove(sha);
    await this.tiers.warm.remove(sha);
    await this.tiers.store.quarantineBlock(sha);
  }

  /**
   * Puts a block into the warm tier in one read of its file, checked as a cold read checks it
   * (pinned arena: every chunk's SHA-256; tmpfs copy: the size and the whole file's SHA-256, which
   * is the block's name), so nothing unchecked becomes warm. A corrupt block is forgotten in every
   * tier and its files quarantined.
   */
  async warmCopy(manifest: BlockManifest): Promise<WarmCopy> {
    const { memory, warm, store } = this.tiers;
    const path = store.statePath(manifest.sha256);
    const outcome = memory
      ? await memory.prefetch(manifest, path)
      : await warm.add(manifest.sha256, path, manifest.sizeBytes);
    if (outcome === "corrupt") await this.forget(manifest.sha256);
    return outcome;
  }

  /** Drops the block's RAM copy (the warm tier), keeping it on disk and in any slot. */
  async dropRamCopy(sha: string): Promise<void> {
    this.tiers.memory?.tier.remove(sha);
    await this.tiers.warm.remove(sha);
  }

  /** The state file after its hash check; a corrupt one (quarantined by the store) leaves every tier. */
  async checkedPath(sha: string): Promise<string> {
    try {
      return await this.tiers.store.checkedStatePath(sha);
    } catch (err) {
      if (err instanceof DomainError && err.code === "block_corrupt") {
        this.tiers.pool.evict(sha);
        await this.dropRamCopy(sha);
      }
      throw err;
    }
  }

  /**
   * The engine build's path: a device copy from another slot holding the block, else the pinned
   * memory tier, else a single checked read from disk into it. Null when it does not apply (npm
   * prebuilt binaries, no chunk hashes, no room in memory).
   */
  private async restoreFromMemory(
    lease: SlotLease,
    manifest: BlockManifest,
    otherEngine: boolean,
  ): Promise<Tier | null> {
    const { memory, engine, pool, store } = this.tiers;
    if (!memory) return null;
    const seq = lease.slot.sequence;
    const holder = engine.canTruncate ? pool.holderOf(manifest.sha256, lease.slot) : null;
    if (holder) {
      await memory.copy(holder.sequence, seq);
      await truncate(seq, manifest.tokenCount);
      return "hot";
    }
    const outcome = await memory
      .restore(seq, manifest, store.statePath(manifest.sha256))
      .catch((err: unknown) => {
        // Under an accepted engine mismatch llama.cpp itself may refuse the state (another KV type).
        if (otherEngine && !(err instanceof DomainError))
          throw conflict("state_incompatible", `llama.cpp refused the state: ${(err as Error).message}`);
        throw err;
      });
    if (outcome === "corrupt") {
      await this.forget(manifest.sha256);
      throw conflict("block_corrupt", `block ${manifest.sha256} failed its hash check and was quarantined`);
    }
    return outcome === "unavailable" ? null : outcome;
  }

  /**
   * node-llama-cpp's file path: the tmpfs warm copy or the hash-checked file on disk (returned as
   * `coldPath`, to be copied to RAM once the block passed its checks).
   */
  private async restoreFromFile(
    seq: LlamaContextSequence,
    manifest: BlockManifest,
    otherEngine: boolean,
  ): Promise<{ tier: Tier; coldPath: string | null }> {
    // A copy into RAM under way (warm start, a prefetch): this restore reads that copy, not the disk.
    if ((await this.tiers.warm.pending(manifest.sha256)) === "corrupt")
      throw conflict("block_corrupt", `block ${manifest.sha256} failed its hash check and was quarantined`);
    const warmPath = this.tiers.warm.path(manifest.sha256);
    const tier: Tier = warmPath ? "warm" : "cold";
    const path = warmPath ?? (await this.checkedPath(manifest.sha256));
    try {
      await loadSequenceState(seq, path);
    } catch (err) {
      // Under an accepted engine mismatch llama.cpp itself may refuse the state (another KV type).
      if (otherEngine)
        throw conflict("state_incompatible", `llama.cpp refused the state: ${(err as Error).message}`);
      throw err;
    }
    return { tier, coldPath: tier === "cold" ? path : null };
  }
}
