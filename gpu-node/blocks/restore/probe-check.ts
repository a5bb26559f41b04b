/**
 * The post-restore probe check: right after a block is restored into a slot, its manifest's probe
 * token is evaluated and the full probability vector's hash compared with the manifest's. It runs
 * when a graft asks (`verifyProbe`) and on a block's first restore from a file (warm or cold) in
 * this process; a block deposited, imported or verified here counts as checked. A mismatch means
 * the stored block does not hold the state its manifest promises (a file hash only proves the
 * bytes are the ones written), so the slot is emptied, the block quarantined, and the request
 * fails with 409 `block_probe_mismatch` (409 like `block_corrupt`: the request was fine, the
 * stored block is not).
 */
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { BlockManifest, Tier } from "../../../shared/protocol.js";
import { evaluateProbe } from "../../engine/probe.js";
import { conflict } from "../../errors.js";

export class ProbeGate {
  private readonly checked = new Set<string>();
  /** Checks run in this process, and how many of them mismatched. */
  readonly counts = { checks: 0, mismatches: 0 };
  /** Fewest nonzero probabilities hashed by one check (the vocabulary size when none underflow). */
  fewestEntries: number | null = null;

  constructor(
    private readonly vocabSize: number,
    /** Takes a refused block out of every tier and moves its files to quarantine. */
    private readonly quarantine: (blockId: string) => Promise<void>,
  ) {}

  /** Whether a restore of `blockId` from `tier` must be probe-checked. */
  needed(blockId: string, tier: Tier, asked: boolean): boolean {
    return asked || (tier !== "hot" && !this.checked.has(blockId));
  }

  /** Records that the block's probe hash was reproduced in this process. */
  markChecked(blockId: string): void {
    this.checked.add(blockId);
  }

  /**
   * Evaluates the probe in `seq` (which holds exactly the block's tokens) and erases it again,
   * so the slot ends at the block's tokens and the graft continues as without the check. On a
   * mismatch: clears the slot, quarantines the block, throws 409 `block_probe_mismatch`.
   */
  async check(seq: LlamaContextSequence, manifest: BlockManifest): Promise<void> {
    const probe = await evaluateProbe(seq, manifest.probe.token as Token, this.vocabSize);
    await seq.eraseContextTokenRanges([{ start: manifest.tokenCount, end: seq.nextTokenIndex }]);
    this.counts.checks++;
    this.fewestEntries = Math.min(this.fewestEntries ?? probe.entries, probe.entries);
    if (probe.sha256 === manifest.probe.sha256) {
      this.checked.add(manifest.sha256);
      return;
    }
    this.counts.mismatches++;
    this.checked.delete(manifest.sha256);
    await seq.clearHistory();
    await this.quarantine(manifest.sha256);
    throw conflict(
      "block_probe_mismatch",
      `block ${manifest.sha256} did not reproduce its probe hash after the restore and was quarantined`,
      { expected: manifest.probe.sha256, actual: probe.sha256 },
    );
  }
}
