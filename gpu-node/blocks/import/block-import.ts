/**
 * Imports of block files built elsewhere. The bytes and the manifest are untrusted: the
 * manifest's model and engine must be this node's, field by field; the file must hash to its
 * manifest, parse against this engine's own state layout (state-format.ts) before llama.cpp
 * reads it, spell the text the manifest's textSha256 names (manifest-check.ts), load in a
 * disposable child process first (isolated-load.ts), and reproduce its probe hash in a slot;
 * only then is it stored, with the size and chunk hashes computed here.
 */
import type { Token } from "node-llama-cpp";
import type { BlockManifest } from "../../../shared/protocol.js";
import type { Engine } from "../../engine/engine.js";
import { evaluateProbe } from "../../engine/probe.js";
import { assertSameOrigin, loadSequenceState } from "../../engine/state.js";
import { conflict, unprocessable } from "../../errors.js";
import type { SlotPool } from "../slots/slot-pool.js";
import type { BlockStore } from "../store/block-store.js";
import { hashFileWithChunks } from "../store/file-hash.js";
import { isolatedLoadCheck } from "./isolated-load.js";
import { checkDerivedFields, checkOrigin } from "./manifest-check.js";
import { type StateLayout, validateStateFile } from "./state-format.js";
import { referenceLayout } from "./state-reference.js";

export class BlockImporter {
  private layout: Promise<StateLayout> | undefined;

  constructor(
    private readonly engine: Engine,
    private readonly store: BlockStore,
    private readonly pool: SlotPool,
    /** Called with each stored block (it passed its probe check). */
    private readonly onStored: (sha256: string) => void,
  ) {}

  /** Checks the file at `tempPath` against `manifest` and stores it; the temp file is gone after. */
  async importFile(tempPath: string, manifest: BlockManifest): Promise<BlockManifest> {
    assertSameOrigin(this.engine, { modelSha256: manifest.model.sha256, engineId: manifest.engine.id });
    if (this.store.has(manifest.sha256)) return this.store.get(manifest.sha256);
    checkOrigin(this.engine, manifest);
    const hashed = await hashFileWithChunks(tempPath);
    const actual = hashed.sha256;
    if (actual !== manifest.sha256)
      throw conflict("import_hash_mismatch", "the uploaded file's SHA-256 differs from its manifest", {
        actual,
      });
    // Before llama.cpp sees the bytes (it trusts every count in the file), and then before the
    // serving process does: the first load runs in a disposable process.
    const layout = await this.stateLayout();
    const tokens = await validateStateFile(tempPath, {
      layout,
      contextSize: this.engine.options.contextSize,
      slidingWindow: this.engine.slidingWindow,
      vocabSize: this.engine.vocabSize,
      sequences: this.engine.slots.length,
      tokenCount: manifest.tokenCount,
      tokensSha256: manifest.tokensSha256,
    });
    await checkDerivedFields(this.engine, manifest, tokens);
    await this.isolatedLoad(tempPath, manifest, layout);
    const lease = await this.pool.acquire(null);
    try {
      const seq = lease.slot.sequence;
      await loadSequenceState(seq, tempPath);
      const probe = await evaluateProbe(seq, manifest.probe.token as Token, this.engine.vocabSize);
      if (probe.sha256 !== manifest.probe.sha256)
        throw unprocessable("block_unverified", "the imported state did not reproduce its probe hash");
    } finally {
      await this.pool.releaseWiped(lease);
    }
    const { sha256: _sha, sizeBytes: _size, ...rest } = manifest;
    const stored = await this.store.commit(tempPath, rest, hashed);
    this.onStored(stored.sha256);
    return stored;
  }

  /**
   * The layout of this engine's states (caches, layers, K/V types and row sizes), read once from
   * a one-token state saved in the leased slot: llama.cpp's own reading of the model's layers,
   * KV heads, head sizes and KV types, which an imported state must match exactly.
   */
  private stateLayout(): Promise<StateLayout> {
    this.layout ??= (async () => {
      const lease = await this.pool.acquire(null);
      try {
        return await referenceLayout(lease.slot.sequence, this.store.tempPath("reference"));
      } finally {
        await this.pool.releaseWiped(lease);
      }
    })().catch((err: unknown) => {
      this.layout = undefined;
      throw err;
    });
    return this.layout;
  }

  /**
   * Loads an imported state in a child process with this engine's shape. Its memory limit: a
   * baseline, the model file, every cell of the context, and the state file twice.
   */
  private isolatedLoad(statePath: string, manifest: BlockManifest, layout: StateLayout): Promise<void> {
    const o = this.engine.options;
    const cellBytes = layout.caches
      .flatMap((c) => c.layers)
      .reduce((sum, l) => sum + l.kRowBytes + l.vBytes * Math.max(1, l.vWidth), 0);
    return isolatedLoadCheck(
      {
        binary: o.binary,
        statePath,
        modelPath: o.modelPath,
        slots: this.engine.slots.length,
        contextSize: o.contextSize,
        batchSize: o.batchSize,
        flashAttention: o.flashAttention,
        kvType: o.kvType === "q8_0" ? "Q8_0" : "F16",
        swaFullCache: o.swaFullCache,
        tokenCount: manifest.tokenCount,
      },
      {
        memoryBytes:
          2 ** 30 +
          this.engine.modelFingerprint.sizeBytes +
          cellBytes * o.contextSize * this.engine.slots.length +
          2 * manifest.sizeBytes,
        timeoutMs: 60_000 + manifest.sizeBytes / 50_000,
      },
    );
  }
}
