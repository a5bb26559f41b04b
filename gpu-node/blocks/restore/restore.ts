/**
 * Restoring a block into a leased slot from the best tier: hot (the slot holds it: erase the
 * tail), else whatever the state path (state-path.ts) finds: another slot holding it (a device
 * copy), warm (RAM: the arena or tmpfs), cold (the file on disk, hash-checked). The probe is
 * checked where `probe-check.ts` says, and always under an accepted engine mismatch. A block that
 * fails a hash or probe check is forgotten in every tier and its files quarantined. Counts hits,
 * misses, restore time and bytes by tier.
 */
import type { Token } from "node-llama-cpp";
import { DomainError } from "../../../shared/errors.js";
import type { BlockManifest, Tier } from "../../../shared/protocol.js";
import type { Engine } from "../../engine/engine.js";
import { evaluateProbe } from "../../engine/probe.js";
import { loadSequenceState } from "../../engine/state.js";
import { conflict } from "../../errors.js";
import { truncate } from "../slots/generation.js";
import type { SlotLease, SlotPool } from "../slots/slot-pool.js";
import type { StatePath } from "../state-path/state-path.js";
import type { WarmCopy } from "../state-path/warm-tier.js";
import type { BlockStore } from "../store/block-store.js";
import type { BlockCheck } from "../types.js";
import { ProbeGate } from "./probe-check.js";

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
  pool: SlotPool;
  /** How state moves between slots, RAM and disk (chosen when the block service opened). */
  state: StatePath;
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
    let passed: (() => void) | undefined;
    if (lease.hot) {
      await truncate(seq, manifest.tokenCount);
      tier = "hot";
    } else {
      this.stats.misses++;
      const holder = engine.canTruncate ? this.tiers.pool.holderOf(manifest.sha256, lease.slot) : null;
      const loaded = await this.tiers.state.load(seq, manifest, {
        holder: holder?.sequence ?? null,
        checkedFile: () => this.checkedPath(manifest.sha256),
        otherEngine,
      });
      if (loaded === "corrupt") {
        await this.forget(manifest.sha256);
        throw conflict("block_corrupt", `block ${manifest.sha256} failed its hash check and was quarantined`);
      }
      ({ tier, passed } = loaded);
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
    passed?.();
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
    await this.tiers.state.drop(sha);
    await this.tiers.store.quarantineBlock(sha);
  }

  /**
   * Puts a block into the warm tier in one read of its file, checked as a cold read checks it
   * (pinned arena: every chunk's SHA-256; tmpfs copy: the size and the whole file's SHA-256, which
   * is the block's name), so nothing unchecked becomes warm. A corrupt block is forgotten in every
   * tier and its files quarantined.
   */
  async warmCopy(manifest: BlockManifest): Promise<WarmCopy> {
    const outcome = await this.tiers.state.warmCopy(manifest);
    if (outcome === "corrupt") await this.forget(manifest.sha256);
    return outcome;
  }

  /** Drops the block's RAM copy (the warm tier), keeping it on disk and in any slot. */
  dropRamCopy(sha: string): Promise<void> {
    return this.tiers.state.drop(sha);
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
}
