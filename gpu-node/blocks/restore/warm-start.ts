/**
 * Warm start. A node's warm tier is RAM, so it is empty after every start, and each block's first
 * graft would restore it cold (from disk: ~10x the cost of a warm restore). So when a node starts
 * it fills the warm tier from its local block store in the background: most recently used first
 * (the order is kept in the state files' mtimes, `BlockStore.byRecentUse`), up to the warm budget,
 * each block read once and hash-checked as a cold read checks it (`Restorer.warmCopy`), so nothing
 * unchecked becomes warm; a corrupt file is quarantined and reported. It holds no slot and the node
 * is ready before it begins: a graft of a block not warm yet restores it cold as before, and a
 * graft of a block being read waits for that read instead of reading the file a second time.
 */
import type { Logger } from "../../../shared/http/logger.js";
import type { BlockManifest } from "../../../shared/protocol.js";
import type { WarmCopy } from "../state-path/warm-tier.js";

/** Where warm start stands, as `/health` and the metrics report it. */
export interface WarmStartStatus {
  /** `off`: disabled; `pending`: the node has not begun it; `running`; `done`. */
  state: "off" | "pending" | "running" | "done";
  /** Blocks on disk when it began. */
  stored: number;
  /** Blocks and bytes it put into the warm tier. */
  blocks: number;
  bytes: number;
  /** Blocks left cold: they did not fit the warm budget beside what was warm already. */
  skipped: number;
  /** Blocks whose file failed its hash check (quarantined, so they are no longer stored). */
  corrupt: string[];
  /** How long the fill took, once done. */
  ms: number | null;
}

/** What warm start reads and fills (the block service's store and tiers). */
export interface WarmStartTiers {
  /** Stored blocks, most recently used first. */
  byRecentUse(): Promise<BlockManifest[]>;
  /** Whether the block is still stored (a delete may come while the fill runs). */
  has(sha: string): boolean;
  isWarm(sha: string): boolean;
  /** The warm tier's bytes in use and its budget. */
  room(): { usedBytes: number; budgetBytes: number };
  /** One checked read of the block into the warm tier. */
  warmCopy(manifest: BlockManifest): Promise<WarmCopy>;
}

const mb = (bytes: number) => Math.round(bytes / 2 ** 20);

export class WarmStart {
  readonly status: WarmStartStatus = {
    state: "pending",
    stored: 0,
    blocks: 0,
    bytes: 0,
    skipped: 0,
    corrupt: [],
    ms: null,
  };
  private run: Promise<WarmStartStatus> | null = null;
  private stopping = false;

  constructor(private readonly tiers: WarmStartTiers) {}

  /** Marks warm start off (the node was configured without it): nothing is read. */
  disable(): void {
    if (this.status.state === "pending") this.status.state = "off";
  }

  /** Begins the fill (once) and resolves with its final status; never rejects. */
  start(log: Logger): Promise<WarmStartStatus> {
    if (this.status.state === "off") return Promise.resolve(this.status);
    this.run ??= this.fill(log).catch((err: Error) => {
      log.error("warm start failed", { error: err.message });
      this.finish(performance.now());
      return this.status;
    });
    return this.run;
  }

  /** Stops after the read in progress (so no read outlives the tiers it writes into). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.run;
  }

  private async fill(log: Logger): Promise<WarmStartStatus> {
    const started = performance.now();
    const s = this.status;
    s.state = "running";
    const blocks = await this.tiers.byRecentUse();
    s.stored = blocks.length;
    const { budgetBytes } = this.tiers.room();
    log.info("warm start: filling the warm tier from disk, most recently used first", {
      stored: blocks.length,
      storedMb: mb(blocks.reduce((sum, m) => sum + m.sizeBytes, 0)),
      budgetMb: mb(budgetBytes),
    });
    for (const manifest of blocks) {
      if (this.stopping) break;
      const sha = manifest.sha256;
      if (!this.tiers.has(sha) || this.tiers.isWarm(sha)) continue;
      // Never evict: what is warm already (a graft's copy) is as recent as anything left on disk.
      const room = this.tiers.room();
      if (room.usedBytes + manifest.sizeBytes > room.budgetBytes) {
        s.skipped++;
        continue;
      }
      const outcome = await this.tiers.warmCopy(manifest);
      if (outcome === "warm") {
        s.blocks++;
        s.bytes += manifest.sizeBytes;
        log.debug("warm start: block warm", { block: sha, bytes: manifest.sizeBytes });
      } else if (outcome === "corrupt") {
        s.corrupt.push(sha);
        log.warn("warm start: block failed its hash check and was quarantined", { block: sha });
      } else s.skipped++;
    }
    this.finish(started);
    log.info("warm start: done", {
      blocks: s.blocks,
      warmMb: mb(s.bytes),
      skipped: s.skipped,
      corrupt: s.corrupt.length,
      ms: s.ms,
      ...(this.stopping ? { stopped: true } : {}),
    });
    return s;
  }

  private finish(started: number): void {
    this.status.state = "done";
    this.status.ms = Math.round(performance.now() - started);
  }
}
