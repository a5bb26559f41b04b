/**
 * The arena state path (state-path.ts) of kvgraft's engine build: a deposit saved into the arena
 * and hashed there, its file written from those bytes; restores from the arena (warm) or from
 * disk read once into it, every chunk checked before the load (cold); a second hot copy made on
 * the device from the slot that holds the block. A block the arena cannot take (too large, no
 * chunk hashes in its manifest) loads from its hash-checked file, as on the file path.
 */
import type { LlamaContextSequence } from "node-llama-cpp";
import { DomainError } from "../../../shared/errors.js";
import type { BlockManifest } from "../../../shared/protocol.js";
import { conflict } from "../../errors.js";
import { truncate } from "../slots/generation.js";
import type { BlockStore } from "../store/block-store.js";
import { loadStateFile } from "./file-path.js";
import type { MemoryPath } from "./memory-path.js";
import type { Loaded, LoadFrom, SavedDeposit, StatePath } from "./state-path.js";
import type { WarmCopy } from "./warm-tier.js";

export class ArenaStatePath implements StatePath {
  constructor(
    readonly arena: MemoryPath,
    private readonly store: BlockStore,
  ) {}

  /** The arena's blocks. */
  get tier(): MemoryPath["tier"] {
    return this.arena.tier;
  }

  /** Saved into the arena and hashed there; the file is written from those bytes. */
  async save(sequence: LlamaContextSequence, temp: string): Promise<SavedDeposit> {
    const saved = await this.arena.save(sequence);
    try {
      await this.arena.writeFile(temp, saved.range);
    } catch (err) {
      saved.drop();
      throw err;
    }
    return {
      hashed: { sha256: saved.sha256, chunks: saved.chunks },
      loadInto: (other) => this.arena.load(other, saved),
      keep: () => saved.keep(),
      drop: () => saved.drop(),
    };
  }

  async load(
    sequence: LlamaContextSequence,
    manifest: BlockManifest,
    from: LoadFrom,
  ): Promise<Loaded | "corrupt"> {
    if (from.holder) {
      await this.arena.copy(from.holder, sequence);
      await truncate(sequence, manifest.tokenCount);
      return { tier: "hot" };
    }
    const outcome = await this.arena
      .restore(sequence, manifest, this.store.statePath(manifest.sha256))
      .catch((err: unknown) => {
        // Under an accepted engine mismatch llama.cpp itself may refuse the state (another KV type).
        if (from.otherEngine && !(err instanceof DomainError))
          throw conflict("state_incompatible", `llama.cpp refused the state: ${(err as Error).message}`);
        throw err;
      });
    if (outcome === "corrupt") return "corrupt";
    if (outcome !== "unavailable") return { tier: outcome };
    await loadStateFile(sequence, await from.checkedFile(), from.otherEngine);
    return { tier: "cold" };
  }

  /** Every chunk's SHA-256 checked as the file is read into the arena. */
  warmCopy(manifest: BlockManifest): Promise<WarmCopy> {
    return this.arena.prefetch(manifest, this.store.statePath(manifest.sha256));
  }

  async drop(sha: string): Promise<void> {
    this.arena.tier.remove(sha);
  }

  async close(): Promise<void> {}
}
