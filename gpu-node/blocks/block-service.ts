/**
 * Deposit and graft over the tiers: hot (resident in a slot: erase the tail, ~free), warm (a
 * RAM copy of the file), cold (the file on disk, hash-checked). Every block is verified when it
 * is made: restored into another slot, its probe must hash like the fresh prefill's; and again
 * after a restore when a graft asks, and on its first restore from a file in a process
 * (`probe-check.ts`).
 */
import { existsSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { badRequest, conflict, DomainError, unprocessable } from "../../shared/errors.js";
import { sha256Hex, sha256OfTokens } from "../../shared/hash.js";
import {
  BLOCK_FORMAT_VERSION,
  type BlockManifest,
  type GenerationResult,
  type Tier,
} from "../../shared/protocol.js";
import type { Engine } from "../engine/engine.js";
import { evaluateProbe } from "../engine/probe.js";
import { assertSameOrigin, loadSequenceState } from "../engine/state.js";
import { nativeStateApi } from "../engine/state-memory.js";
import { BlockStore, type StoreRecovery } from "./block-store.js";
import { hashFileWithChunks } from "./file-hash.js";
import { isolatedLoadCheck } from "./isolated-load.js";
import { MemoryPath, type SavedState } from "./memory-path.js";
import { ProbeGate } from "./probe-check.js";
import { type SlotLease, SlotPool } from "./slot-pool.js";
import { type StateLayout, validateStateFile } from "./state-format.js";
import { referenceLayout } from "./state-reference.js";
import type { BlockCheck, Blocks, GenerationOptions, TierSnapshot } from "./types.js";
import { WarmTier } from "./warm-tier.js";

export interface BlockServiceOptions {
  engine: Engine;
  /** Block store root (blocks/, tmp/, quarantine/). */
  dataDir: string;
  /** RAM folder for the warm tier; defaults to a private folder on /dev/shm when present. */
  warmDir?: string;
  /**
   * Warm-tier budget in bytes (0 disables it): pinned host memory on our engine build, else
   * files on tmpfs.
   */
  warmBudgetBytes?: number;
  /** Requests that may wait for a slot before a 429. */
  maxWaiting?: number;
}

const ZERO_TIERS = (): Record<Tier, number> => ({ hot: 0, warm: 0, cold: 0 });

/** First token id that is neither a special nor a byte token in the generated vocabularies. */
const FIRST_ORDINARY_TOKEN = 259;

/** The probe token of a block: derived from its tokens, so it is the same wherever it is made. */
export function probeTokenFor(tokensSha256: string, vocabSize: number): Token {
  const first = Math.min(FIRST_ORDINARY_TOKEN, vocabSize - 1);
  return (first + (Number.parseInt(tokensSha256.slice(0, 8), 16) % (vocabSize - first))) as Token;
}

export class BlockService implements Blocks {
  private readonly stats = {
    hits: ZERO_TIERS(),
    restoreMsSum: ZERO_TIERS(),
    bytesLoaded: ZERO_TIERS(),
    misses: 0,
  };
  private depositChain: Promise<unknown> = Promise.resolve();
  private readonly depositsInFlight = new Map<string, Promise<BlockManifest>>();
  /** The post-restore probe check and its counters. */
  readonly probes: ProbeGate;
  private layout: Promise<StateLayout> | undefined;

  private constructor(
    readonly engine: Engine,
    readonly store: BlockStore,
    readonly warm: WarmTier,
    readonly pool: SlotPool,
    readonly recovery: StoreRecovery,
    /** The in-memory state path of our engine build; null on the npm prebuilt binaries. */
    readonly memory: MemoryPath | null,
  ) {
    this.probes = new ProbeGate(engine.vocabSize, (sha) => this.forget(sha));
  }

  /** Opens the store (recovering from crashes) and the tiers. */
  static async open(options: BlockServiceOptions): Promise<BlockService> {
    const { store, recovery } = await BlockStore.open(options.dataDir);
    const shm = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
    if (!options.warmDir) await sweepDeadWarmDirs(shm);
    const warmBudget = options.warmBudgetBytes ?? 2 * 2 ** 30;
    const memory = warmBudget > 0 ? MemoryPath.open(nativeStateApi(options.engine.llama), warmBudget) : null;
    const warm = await WarmTier.open(
      options.warmDir ?? join(shm, `kvgraft-warm-${process.pid}`),
      memory ? 0 : warmBudget,
    );
    const pool = new SlotPool(options.engine.slots, options.maxWaiting ?? options.engine.slots.length * 4);
    return new BlockService(options.engine, store, warm, pool, recovery, memory);
  }

  list(): BlockManifest[] {
    return this.store.list();
  }

  get(blockId: string): BlockManifest {
    return this.store.get(blockId);
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
    const key = text;
    const pending = this.depositsInFlight.get(key);
    if (pending) return pending;
    // One deposit at a time: it holds two slots, and two deposits each holding one would deadlock.
    const work = this.depositChain.then(() => this.depositNow(text, tokens));
    this.depositChain = work.catch(() => undefined);
    this.depositsInFlight.set(key, work);
    return work.finally(() => this.depositsInFlight.delete(key));
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
    let saved: SavedState | null = null;
    try {
      const seqA = a.slot.sequence;
      await seqA.clearHistory();
      await seqA.evaluateWithoutGeneratingNewTokens(tokens);
      if (this.memory) {
        // Saved into pinned memory and hashed there; the file is written from those bytes.
        saved = await this.memory.save(seqA);
        await this.memory.writeFile(temp, saved);
      } else await seqA.saveStateToFile(temp);
      const fresh = await evaluateProbe(seqA, probe, this.engine.vocabSize);
      await truncate(seqA, tokens.length);
      // Verify in another slot; with a single slot, in the same one after clearing it.
      const b = this.pool.slots.length > 1 ? await this.pool.acquire(null) : null;
      const seqB = b ? b.slot.sequence : seqA;
      try {
        if (this.memory && saved) await this.memory.load(seqB, saved);
        else await loadSequenceState(seqB, temp);
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
        {
          formatVersion: BLOCK_FORMAT_VERSION,
          tokenCount: tokens.length,
          tokensSha256,
          textSha256: await sha256Hex(text),
          model: this.engine.modelFingerprint,
          engine: this.engine.engineFingerprint,
          probe: { token: probe, sha256: fresh.sha256 },
          createdAt: new Date().toISOString(),
        },
        saved ? { sha256: saved.sha256, chunks: saved.chunks } : undefined,
      );
      this.probes.markChecked(manifest.sha256);
      saved?.keep();
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
    const manifest = this.store.get(blockId);
    assertSameOrigin(
      this.engine,
      { modelSha256: manifest.model.sha256, engineId: manifest.engine.id },
      options.acceptEngineMismatch ? { acceptEngineMismatch: true } : undefined,
    );
    const queryTokens = this.engine.model.tokenize(query);
    this.assertFits(manifest.tokenCount + queryTokens.length, options.maxTokens);
    const lease = await this.pool.acquire(blockId, options.signal);
    try {
      const tier = await this.restore(lease, manifest, options.verifyProbe === true);
      const restoreMs = performance.now() - started;
      const result = await this.decode(lease.slot.sequence, queryTokens, options);
      lease.release(this.engine.canTruncate ? blockId : null);
      return this.result(result, {
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
      const result = await this.decode(lease.slot.sequence, tokens, options);
      await lease.slot.sequence.clearHistory();
      lease.release(null);
      return this.result(result, {
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

  /** Moves a block up a tier ahead of a request. */
  async prefetch(blockId: string, tier: "hot" | "warm"): Promise<Tier> {
    const manifest = this.store.get(blockId);
    if (tier === "warm" || !this.engine.canTruncate) {
      if (this.memory) {
        const fetched = await this.memory.prefetch(manifest, this.store.statePath(blockId));
        if (fetched === "corrupt") await this.forget(blockId);
        return fetched === "warm" ? "warm" : "cold";
      }
      if (this.warm.path(blockId)) return "warm";
      const path = await this.checkedPath(blockId);
      return (await this.warm.add(blockId, path, manifest.sizeBytes)) ? "warm" : "cold";
    }
    assertSameOrigin(this.engine, { modelSha256: manifest.model.sha256, engineId: manifest.engine.id });
    const lease = await this.pool.acquire(blockId);
    try {
      await this.restore(lease, manifest, false);
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
    const lease = await this.pool.acquire(null);
    let keep: string | null = null;
    try {
      const started = performance.now();
      await loadSequenceState(lease.slot.sequence, await this.checkedPath(blockId));
      const restoreMs = performance.now() - started;
      const probe = await evaluateProbe(
        lease.slot.sequence,
        manifest.probe.token as Token,
        this.engine.vocabSize,
      );
      await truncate(lease.slot.sequence, manifest.tokenCount);
      const ok = probe.sha256 === manifest.probe.sha256;
      if (ok) this.probes.markChecked(blockId);
      if (ok && this.engine.canTruncate) keep = blockId;
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
      else await this.pool.releaseWiped(lease);
    }
  }

  /** Adds a block file built elsewhere after checking its hash, fingerprints and probe. */
  async importFile(tempPath: string, manifest: BlockManifest): Promise<BlockManifest> {
    try {
      assertSameOrigin(this.engine, { modelSha256: manifest.model.sha256, engineId: manifest.engine.id });
      if (this.store.has(manifest.sha256)) return this.store.get(manifest.sha256);
      const hashed = await hashFileWithChunks(tempPath);
      const actual = hashed.sha256;
      if (actual !== manifest.sha256)
        throw conflict("import_hash_mismatch", "the uploaded file's SHA-256 differs from its manifest", {
          actual,
        });
      // Before llama.cpp sees the bytes (it trusts every count in the file), and then before the
      // serving process does: the first load runs in a disposable process.
      const layout = await this.stateLayout();
      await validateStateFile(tempPath, {
        layout,
        contextSize: this.engine.options.contextSize,
        slidingWindow: this.engine.slidingWindow,
        vocabSize: this.engine.vocabSize,
        sequences: this.engine.slots.length,
        tokenCount: manifest.tokenCount,
        tokensSha256: manifest.tokensSha256,
      });
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
      this.probes.markChecked(stored.sha256);
      return stored;
    } finally {
      await rm(tempPath, { force: true });
    }
  }

  /** Drops the block's RAM copy (the warm tier), keeping it on disk and in any slot. */
  async dropRamCopy(blockId: string): Promise<void> {
    this.memory?.tier.remove(blockId);
    await this.warm.remove(blockId);
  }

  async delete(blockId: string): Promise<void> {
    this.store.get(blockId);
    this.pool.evict(blockId);
    this.memory?.tier.remove(blockId);
    await this.warm.remove(blockId);
    await this.store.delete(blockId);
  }

  snapshot(): TierSnapshot {
    const hot = [...new Set(this.pool.hotBlocks())];
    return {
      hot,
      warm: this.memory?.tier.blocks() ?? this.warm.blocks(),
      coldCount: this.store.list().length,
      slots: { total: this.pool.slots.length, busy: this.pool.busyCount, retired: this.pool.retiredCount },
      queue: { depth: this.pool.queueDepth, capacity: this.pool.maxWaiting },
      hits: { ...this.stats.hits },
      misses: this.stats.misses,
      restoreMsSum: { ...this.stats.restoreMsSum },
      bytesLoaded: { ...this.stats.bytesLoaded },
      warmBytes: this.memory?.tier.usedBytes ?? this.warm.usedBytes,
      warmBudgetBytes: this.memory?.tier.budgetBytes ?? this.warm.budgetBytes,
    };
  }

  /** Removes the warm tier's RAM folder; the engine is disposed by its owner. */
  async close(): Promise<void> {
    await this.warm.close();
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

  /**
   * Puts the block at [0, n) in the leased slot from the best tier; returns the tier used. The
   * probe is checked when `verifyProbe`, on the block's first restore from a file in this
   * process, and always under an accepted engine mismatch.
   */
  private async restore(lease: SlotLease, manifest: BlockManifest, verifyProbe: boolean): Promise<Tier> {
    const seq = lease.slot.sequence;
    const started = performance.now();
    const otherEngine = manifest.engine.id !== this.engine.engineFingerprint.id;
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
      const probe = await evaluateProbe(seq, manifest.probe.token as Token, this.engine.vocabSize);
      await truncate(seq, manifest.tokenCount);
      if (probe.sha256 !== manifest.probe.sha256)
        throw conflict(
          "probe_mismatch",
          "the block loaded under a different engine does not reproduce its probe hash",
        );
    } else if (this.probes.needed(manifest.sha256, tier, verifyProbe)) await this.probes.check(seq, manifest);
    // Only a block that passed its checks gets a RAM copy.
    if (coldPath) void this.warm.add(manifest.sha256, coldPath, manifest.sizeBytes);
    this.stats.hits[tier]++;
    this.stats.restoreMsSum[tier] += performance.now() - started;
    return tier;
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
    if (!this.memory) return null;
    const seq = lease.slot.sequence;
    const holder = this.engine.canTruncate ? this.pool.holderOf(manifest.sha256, lease.slot) : null;
    if (holder) {
      await this.memory.copy(holder.sequence, seq);
      await truncate(seq, manifest.tokenCount);
      return "hot";
    }
    const outcome = await this.memory
      .restore(seq, manifest, this.store.statePath(manifest.sha256))
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
    const warmPath = this.warm.path(manifest.sha256);
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

  /** Forgets a block in every tier and quarantines its files (a failed hash or probe check). */
  private async forget(sha: string): Promise<void> {
    this.pool.evict(sha);
    this.memory?.tier.remove(sha);
    await this.warm.remove(sha);
    await this.store.quarantineBlock(sha);
  }

  private async checkedPath(sha: string): Promise<string> {
    try {
      return await this.store.checkedStatePath(sha);
    } catch (err) {
      if (err instanceof DomainError && err.code === "block_corrupt") {
        this.pool.evict(sha);
        await this.dropRamCopy(sha);
      }
      throw err;
    }
  }

  private assertFits(promptTokens: number, maxTokens: number): void {
    if (promptTokens + maxTokens > this.engine.options.contextSize)
      throw badRequest(
        "context_overflow",
        `${promptTokens} prompt tokens + ${maxTokens} new tokens exceed the slot's ${this.engine.options.contextSize}`,
      );
  }

  private async decode(seq: LlamaContextSequence, input: Token[], options: GenerationOptions) {
    const sampling = options.sampling ?? { temperature: 0 };
    const tokens: Token[] = [];
    let finishReason: GenerationResult["finishReason"] = "eog";
    const t0 = performance.now();
    let firstAt = t0;
    if (options.signal?.aborted) return { tokens, queryMs: 0, decodeMs: 0, finishReason: "aborted" as const };
    const generator = seq.evaluate(input, {
      temperature: sampling.temperature,
      ...(sampling.topK !== undefined ? { topK: sampling.topK } : {}),
      ...(sampling.topP !== undefined ? { topP: sampling.topP } : {}),
      ...(sampling.seed !== undefined ? { seed: sampling.seed } : {}),
    });
    for await (const token of generator) {
      if (tokens.length === 0) firstAt = performance.now();
      tokens.push(token);
      options.onToken?.(token, this.engine.model.detokenize([token]));
      if (tokens.length >= options.maxTokens) {
        finishReason = "maxTokens";
        break;
      }
      if (options.signal?.aborted) {
        finishReason = "aborted";
        break;
      }
    }
    const end = performance.now();
    return {
      tokens,
      queryMs: (tokens.length ? firstAt : end) - t0,
      decodeMs: end - (tokens.length ? firstAt : end),
      finishReason,
    };
  }

  private async result(
    decoded: Awaited<ReturnType<BlockService["decode"]>>,
    meta: {
      blockSha256: string | null;
      tier: Tier | null;
      tokensIn: number;
      restoreMs: number;
      started: number;
    },
  ): Promise<GenerationResult> {
    return {
      text: this.engine.model.detokenize(decoded.tokens),
      tokens: decoded.tokens.map(Number),
      outputSha256: await sha256OfTokens(decoded.tokens.map(Number)),
      blockSha256: meta.blockSha256,
      tier: meta.tier,
      tokensIn: meta.tokensIn,
      tokensOut: decoded.tokens.length,
      timings: {
        restoreMs: meta.restoreMs,
        queryMs: decoded.queryMs,
        decodeMs: decoded.decodeMs,
        totalMs: performance.now() - meta.started,
      },
      finishReason: decoded.finishReason,
    };
  }
}

/** Erases everything after the first `n` tokens (the hot tier's graft: ~0.1 ms). */
async function truncate(seq: LlamaContextSequence, n: number): Promise<void> {
  if (seq.nextTokenIndex > n) await seq.eraseContextTokenRanges([{ start: n, end: seq.nextTokenIndex }]);
}

/**
 * Removes the default warm-tier folders (`kvgraft-warm-<pid>`, RAM on tmpfs) of processes that
 * are gone: a node killed with SIGKILL never runs its close(), and its RAM copies would stay.
 */
async function sweepDeadWarmDirs(dir: string): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(/^kvgraft-warm-(\d+)$/.exec(name)?.[1]);
    if (!pid || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ESRCH")
        await rm(join(dir, name), { recursive: true, force: true }).catch(() => undefined);
    }
  }
}
