/**
 * The file state path (state-path.ts): node-llama-cpp's state files, on the npm prebuilt binaries
 * or without a warm budget. A deposit is saved to its file and verified from it; the warm tier is
 * copies of block files on tmpfs (warm-tier.ts), a cold block's copy made only after the restore
 * passed its checks.
 */
import type { LlamaContextSequence } from "node-llama-cpp";
import type { BlockManifest } from "../../../shared/protocol.js";
import { loadSequenceState } from "../../engine/state.js";
import { conflict } from "../../errors.js";
import type { BlockStore } from "../store/block-store.js";
import type { Loaded, LoadFrom, SavedDeposit, StatePath } from "./state-path.js";
import { type WarmCopy, WarmTier } from "./warm-tier.js";

/**
 * Loads a state file; under an accepted engine mismatch a refusal by llama.cpp (another KV type,
 * say) is a 409 `state_incompatible`.
 */
export async function loadStateFile(
  sequence: LlamaContextSequence,
  path: string,
  otherEngine: boolean,
): Promise<void> {
  try {
    await loadSequenceState(sequence, path);
  } catch (err) {
    if (otherEngine)
      throw conflict("state_incompatible", `llama.cpp refused the state: ${(err as Error).message}`);
    throw err;
  }
}

export class FileStatePath implements StatePath {
  readonly arena = null;

  private constructor(
    private readonly store: BlockStore,
    /** The tmpfs copies. */
    readonly tier: WarmTier,
  ) {}

  /** Creates (emptying) the RAM folder `warmDir`; a budget of 0 keeps nothing there. */
  static async open(store: BlockStore, warmDir: string, warmBudgetBytes: number): Promise<FileStatePath> {
    return new FileStatePath(store, await WarmTier.open(warmDir, warmBudgetBytes));
  }

  async save(sequence: LlamaContextSequence, temp: string): Promise<SavedDeposit> {
    await sequence.saveStateToFile(temp);
    return {
      hashed: undefined,
      loadInto: (other) => loadSequenceState(other, temp),
      keep: () => undefined,
      drop: () => undefined,
    };
  }

  /** The tmpfs copy ("warm") or the hash-checked file ("cold"), copied to RAM once the block passed its checks. */
  async load(sequence: LlamaContextSequence, manifest: BlockManifest, from: LoadFrom): Promise<Loaded> {
    const sha = manifest.sha256;
    // A copy into RAM under way (warm start, a prefetch): this restore reads that copy, not the disk.
    if ((await this.tier.pending(sha)) === "corrupt")
      throw conflict("block_corrupt", `block ${sha} failed its hash check and was quarantined`);
    const warmPath = this.tier.path(sha);
    const path = warmPath ?? (await from.checkedFile());
    await loadStateFile(sequence, path, from.otherEngine);
    if (warmPath) return { tier: "warm" };
    return { tier: "cold", passed: () => void this.tier.add(sha, path, manifest.sizeBytes) };
  }

  /** A tmpfs copy, checked by its size and the whole file's SHA-256 (the block's name) as it is made. */
  warmCopy(manifest: BlockManifest): Promise<WarmCopy> {
    return this.tier.add(manifest.sha256, this.store.statePath(manifest.sha256), manifest.sizeBytes);
  }

  drop(sha: string): Promise<void> {
    return this.tier.remove(sha);
  }

  close(): Promise<void> {
    return this.tier.close();
  }
}
