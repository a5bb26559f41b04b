/**
 * How block state moves between a slot, RAM and disk, chosen once when the block service opens:
 * - the arena path (arena-path.ts; kvgraft's engine build with a warm budget): a deposit saved
 *   into host memory (pinned on a GPU) and hashed there, the warm tier that arena, a cold block
 *   read once from disk into it, a second hot copy made on the device;
 * - the file path (file-path.ts; the npm prebuilt binaries, or no warm budget): node-llama-cpp's
 *   state files, the warm tier copies of them on tmpfs.
 * The block service and the restorer hold a StatePath and never ask which one it is.
 */
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence } from "node-llama-cpp";
import type { BlockManifest, Tier } from "../../../shared/protocol.js";
import type { NativeStateApi } from "../../engine/state-memory.js";
import type { BlockStore } from "../store/block-store.js";
import { ArenaStatePath } from "./arena-path.js";
import { FileStatePath } from "./file-path.js";
import { MemoryPath } from "./memory-path.js";
import { sweepDeadWarmDirs, type WarmCopy } from "./warm-tier.js";

/** The warm tier as the snapshot and warm start see it. */
export interface WarmTierView {
  readonly usedBytes: number;
  readonly budgetBytes: number;
  has(sha: string): boolean;
  blocks(): string[];
}

/** A deposit's state, saved from its prefilled slot to the temp file the store then commits. */
export interface SavedDeposit {
  /** The file's SHA-256 and chunk hashes when the save computed them (else the store reads the file). */
  readonly hashed: { sha256: string; chunks: string[] } | undefined;
  /** Loads the saved state into another sequence (the deposit's verification). */
  loadInto(sequence: LlamaContextSequence): Promise<void>;
  /** Keeps the saved bytes as the block's warm copy (the arena path), once the block is committed. */
  keep(): void;
  /** Frees what the save holds without keeping it. */
  drop(): void;
}

/** What a restore hands the state path besides the block. */
export interface LoadFrom {
  /** Another slot holding the block resident (the arena path copies it on the device), or null. */
  holder: LlamaContextSequence | null;
  /** The block's file after its hash check; a corrupt one has left every tier (409 `block_corrupt`). */
  checkedFile(): Promise<string>;
  /** Made under another engine (an accepted mismatch): llama.cpp itself may refuse the state. */
  otherEngine: boolean;
}

/** The tier a load read the block from; `passed` runs once the block passed its checks. */
export interface Loaded {
  tier: Tier;
  passed?: () => void;
}

export interface StatePath {
  /** The warm tier: the blocks in RAM, the bytes they use and the budget. */
  readonly tier: WarmTierView;
  /** The arena a bucket fetch fills as it downloads (disk-cache.ts), or null: it fetches into a file. */
  readonly arena: MemoryPath | null;
  /** Saves the sequence's state to `temp` for a deposit. */
  save(sequence: LlamaContextSequence, temp: string): Promise<SavedDeposit>;
  /**
   * Puts the stored block into the sequence at [0, n): from another slot, the warm tier or its
   * file. "corrupt": its bytes failed a hash check, nothing was loaded (the caller forgets it).
   */
  load(sequence: LlamaContextSequence, manifest: BlockManifest, from: LoadFrom): Promise<Loaded | "corrupt">;
  /** One read of the block's file into the warm tier, checked as a cold read checks it. */
  warmCopy(manifest: BlockManifest): Promise<WarmCopy>;
  /** Drops the block's warm copy. */
  drop(sha: string): Promise<void>;
  /** Removes what the path keeps outside the process (the tmpfs folder). */
  close(): Promise<void>;
}

export interface StatePathOptions {
  /** The engine build's native state API; null on the npm prebuilt binaries. */
  api: NativeStateApi | null;
  store: BlockStore;
  /** Warm-tier budget in bytes; 0: no warm tier. */
  warmBudgetBytes: number;
  /** The file path's RAM folder; default a private folder on /dev/shm when present. */
  warmDir?: string | undefined;
}

/** The arena path when the engine build has it and there is a warm budget, else the file path. */
export async function openStatePath(options: StatePathOptions): Promise<StatePath> {
  const shm = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
  if (!options.warmDir) await sweepDeadWarmDirs(shm);
  const memory = options.warmBudgetBytes > 0 ? MemoryPath.open(options.api, options.warmBudgetBytes) : null;
  if (memory) return new ArenaStatePath(memory, options.store);
  return FileStatePath.open(
    options.store,
    options.warmDir ?? join(shm, `kvgraft-warm-${process.pid}`),
    options.warmBudgetBytes,
  );
}
