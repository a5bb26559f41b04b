/**
 * kvgraft's engine build (scripts/build-engine.sh cpu, loaded as node-llama-cpp's lastBuild):
 * state saved to and loaded from memory is byte-for-byte the file format and restores exactly;
 * the memory tier serves warm and single-read cold restores, refuses corrupt files before any
 * load, and a device-side copy reproduces the block. Skipped, saying why, where the build is
 * absent (a machine that only ran `npm ci`); CI builds it first.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { ArenaStatePath } from "../gpu-node/blocks/state-path/arena-path.js";
import { FileStatePath } from "../gpu-node/blocks/state-path/file-path.js";
import { sha256File } from "../gpu-node/blocks/store/block-store.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { evaluateProbe } from "../gpu-node/engine/probe.js";
import {
  copySequence,
  loadSequenceFromMemory,
  nativeStateApi,
  saveSequenceToMemory,
} from "../gpu-node/engine/state-memory.js";
import { DomainError } from "../shared/errors.js";
import { noEngineBuildReason } from "./helpers/engine-build.js";
import { syntheticModel } from "./helpers/models.js";
import { skipEachWith } from "./helpers/skip.js";

const NO_ENGINE = await noEngineBuildReason();

describe("engine build: in-memory state path", () => {
  skipEachWith(NO_ENGINE, "engine-memory.test");
  const dirs: string[] = [];
  let engine: Engine;
  const fresh = (label: string) => {
    const dir = mkdtempSync(join(tmpdir(), `kvgraft-mem-${label}-`));
    dirs.push(dir);
    return dir;
  };

  beforeAll(async () => {
    if (NO_ENGINE) return;
    engine = await Engine.open({
      modelPath: syntheticModel("tiny-llama"),
      slots: 3,
      contextSize: 1024,
      binary: "lastBuild",
    });
  });
  afterAll(async () => {
    await engine?.dispose();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const tokensOf = (n: number, seed: number) =>
    Array.from(
      { length: n },
      (_, i) => (300 + ((i * 7919 + seed * 104729) % (engine.vocabSize - 300))) as Token,
    );

  it("saves the same bytes as the file path and restores them exactly", async () => {
    const api = nativeStateApi(engine.llama);
    if (!api) throw new Error("no api");
    const [a, b] = [engine.slot(0), engine.slot(1)];
    const tokens = tokensOf(300, 1);
    await a.clearHistory();
    await a.evaluateWithoutGeneratingNewTokens(tokens);
    const path = join(fresh("file"), "a.state");
    await a.saveStateToFile(path);
    const { arena } = api.allocArena(64 * 2 ** 20);
    const bytes = await saveSequenceToMemory(api, a, () => ({ arena, offset: 4096 }));
    expect(api.copyOut(arena, bytes.offset, bytes.length).equals(readFileSync(path))).toBe(true);

    const probe = 300 as Token;
    const expected = await evaluateProbe(a, probe, engine.vocabSize);
    await loadSequenceFromMemory(api, b, bytes);
    expect(b.nextTokenIndex).toBe(tokens.length);
    expect(b.contextTokens).toEqual(tokens);
    expect((await evaluateProbe(b, probe, engine.vocabSize)).sha256).toBe(expected.sha256);

    // A device-side copy of the resident block into a third slot gives the same probe.
    const c = engine.slot(2);
    await a.eraseContextTokenRanges([{ start: tokens.length, end: a.nextTokenIndex }]);
    await copySequence(api, a, c);
    expect(c.nextTokenIndex).toBe(tokens.length);
    expect((await evaluateProbe(c, probe, engine.vocabSize)).sha256).toBe(expected.sha256);
    for (const s of [a, b, c]) await s.clearHistory();
  });

  it("a refused state leaves the slot empty and usable", async () => {
    const api = nativeStateApi(engine.llama);
    if (!api) throw new Error("no api");
    const [a, b] = [engine.slot(0), engine.slot(1)];
    await a.evaluateWithoutGeneratingNewTokens(tokensOf(200, 2));
    const { arena } = api.allocArena(64 * 2 ** 20);
    const bytes = await saveSequenceToMemory(api, a, () => ({ arena, offset: 0 }));
    await a.clearHistory();
    await expect(loadSequenceFromMemory(api, b, { ...bytes, length: bytes.length - 1 })).rejects.toThrow();
    expect(b.nextTokenIndex).toBe(0);
    // No cell of the sequence is left in llama.cpp's cache (max position -1).
    const ctx = (engine.context as unknown as { _ctx: { getSequenceKvCacheMaxPosition(id: number): number } })
      ._ctx;
    const sequenceId = (b as unknown as { _sequenceId: number })._sequenceId;
    expect(ctx.getSequenceKvCacheMaxPosition(sequenceId)).toBe(-1);
    // The slot still prefills and probes like a fresh one.
    const tokens = tokensOf(50, 3);
    await b.evaluateWithoutGeneratingNewTokens(tokens);
    await a.evaluateWithoutGeneratingNewTokens(tokens);
    const probe = 301 as Token;
    expect((await evaluateProbe(b, probe, engine.vocabSize)).sha256).toBe(
      (await evaluateProbe(a, probe, engine.vocabSize)).sha256,
    );
    await a.clearHistory();
    await b.clearHistory();
  });

  it("a device copy into a slot that held a longer sequence is exact, and so is the prefill after a wipe", async () => {
    // llama-patches/seq-copy-used-cells.diff copies only the cells in use and rebuilds the target's
    // cell bookkeeping in one piece: cells past the copied block keep the old sequence's data and
    // must not be seen, and a wiped slot must prefill as a fresh one.
    const api = nativeStateApi(engine.llama);
    if (!api) throw new Error("no api");
    const [a, b, c] = [engine.slot(0), engine.slot(1), engine.slot(2)];
    const probe = 302 as Token;
    await c.evaluateWithoutGeneratingNewTokens(tokensOf(600, 4));
    const short = tokensOf(150, 5);
    await a.evaluateWithoutGeneratingNewTokens(short);
    const expected = await evaluateProbe(a, probe, engine.vocabSize);
    await a.eraseContextTokenRanges([{ start: short.length, end: a.nextTokenIndex }]);
    await copySequence(api, a, c);
    expect(c.contextTokens).toEqual(short);
    expect((await evaluateProbe(c, probe, engine.vocabSize)).sha256).toBe(expected.sha256);
    // The copy's target goes on evaluating like the source.
    const more = tokensOf(40, 6);
    await c.eraseContextTokenRanges([{ start: short.length, end: c.nextTokenIndex }]);
    await a.evaluateWithoutGeneratingNewTokens(more);
    await c.evaluateWithoutGeneratingNewTokens(more);
    expect((await evaluateProbe(c, probe, engine.vocabSize)).sha256).toBe(
      (await evaluateProbe(a, probe, engine.vocabSize)).sha256,
    );
    // Wiped whole (one stream per sequence), then prefilled: the same as a slot never used.
    const sequenceId = (b as unknown as { _sequenceId: number })._sequenceId;
    const ctx = (engine.context as unknown as { _ctx: unknown })._ctx;
    await b.evaluateWithoutGeneratingNewTokens(tokensOf(500, 7));
    expect(api.wipeSequence(ctx, sequenceId)).toBe(true);
    await b.clearHistory();
    await b.evaluateWithoutGeneratingNewTokens(short);
    expect((await evaluateProbe(b, probe, engine.vocabSize)).sha256).toBe(expected.sha256);
    for (const s of [a, b, c]) await s.clearHistory();
  });

  it("a device copy onto the slot that just evaluated is exact (the previous graph is reused)", async () => {
    // llama-patches/stream-copy-keeps-graph.diff: a copy-only cache update keeps the previous graph
    // and skips the worst-case reserve, so the target's next token runs on the graph built for its
    // last token: it must see the copied cells, not the slot's old ones.
    const api = nativeStateApi(engine.llama);
    if (!api) throw new Error("no api");
    const [a, b] = [engine.slot(0), engine.slot(1)];
    const probe = 304 as Token;
    const [s1, s2] = [tokensOf(120, 9), tokensOf(120, 10)];
    await a.evaluateWithoutGeneratingNewTokens(s1);
    const expected = await evaluateProbe(a, probe, engine.vocabSize);
    await b.evaluateWithoutGeneratingNewTokens(s2);
    const old = await evaluateProbe(b, probe, engine.vocabSize);
    expect(old.sha256).not.toBe(expected.sha256);
    await a.eraseContextTokenRanges([{ start: s1.length, end: a.nextTokenIndex }]);
    await b.eraseContextTokenRanges([{ start: s2.length, end: b.nextTokenIndex }]);
    await copySequence(api, a, b);
    expect((await evaluateProbe(b, probe, engine.vocabSize)).sha256).toBe(expected.sha256);
    // And the source, evaluated next on its own graph, is unchanged by the copy.
    await a.eraseContextTokenRanges([{ start: s1.length, end: a.nextTokenIndex }]);
    expect((await evaluateProbe(a, probe, engine.vocabSize)).sha256).toBe(expected.sha256);
    for (const s of [a, b]) await s.clearHistory();
  });

  it("reports llama.cpp's own decode timings for single tokens and batches, then resets them", async () => {
    const api = nativeStateApi(engine.llama);
    if (!api) throw new Error("no api");
    const a = engine.slot(0);
    const ctx = (engine.context as unknown as { _ctx: unknown })._ctx;
    api.takeEvalTimings(ctx);
    await a.evaluateWithoutGeneratingNewTokens(tokensOf(64, 8));
    const batch = api.takeEvalTimings(ctx);
    expect(batch.batchEvalMs).toBeGreaterThan(0);
    expect(batch.tokenEvalMs).toBe(0);
    await a.controlledEvaluate([[303 as Token, { generateNext: { token: true } }]]);
    const token = api.takeEvalTimings(ctx);
    expect(token.tokenEvalMs).toBeGreaterThan(0);
    expect(token.batchEvalMs).toBe(0);
    expect(api.takeEvalTimings(ctx)).toEqual({ tokenEvalMs: 0, batchEvalMs: 0 });
    await a.clearHistory();
  });

  it("the block service opens one state path: the arena with a warm budget (no tmpfs folder), else the file path", async () => {
    const warmDir = join(fresh("warm"), "w");
    const arena = await BlockService.open({
      engine,
      dataDir: fresh("data"),
      warmDir,
      warmBudgetBytes: 8 * 2 ** 20,
    });
    try {
      expect(arena.state).toBeInstanceOf(ArenaStatePath);
      expect(arena.state.tier.budgetBytes).toBe(8 * 2 ** 20);
      expect(existsSync(warmDir)).toBe(false);
    } finally {
      await arena.close();
    }
    const file = await BlockService.open({ engine, dataDir: fresh("data"), warmDir, warmBudgetBytes: 0 });
    try {
      expect(file.state).toBeInstanceOf(FileStatePath);
      expect(file.state.arena).toBeNull();
      expect(existsSync(warmDir)).toBe(true);
      const manifest = await file.deposit(Array.from({ length: 12 }, (_, k) => `file fact${k}`).join(" "));
      expect(file.snapshot().warm).toEqual([]);
      file.pool.evict(manifest.sha256);
      expect((await file.graft(manifest.sha256, " So:", { maxTokens: 2 })).tier).toBe("cold");
    } finally {
      await file.close();
    }
    expect(existsSync(warmDir)).toBe(false);
  });

  it("the block service deposits into memory, restores warm and single-read cold, and refuses a corrupt file", async () => {
    const service = await BlockService.open({
      engine,
      dataDir: fresh("data"),
      warmDir: join(fresh("warm"), "w"),
      warmBudgetBytes: 64 * 2 ** 20,
    });
    try {
      expect(service.state.arena).not.toBeNull();
      const text = Array.from({ length: 20 }, (_, k) => `memory fact${k} alpha beta`).join(" ");
      const manifest = await service.deposit(text);
      // Deposited bytes are the warm copy; the file on disk is the same bytes.
      expect(service.state.arena?.tier.has(manifest.sha256)).toBe(true);
      // The hashes computed in memory (natively) are the file's real SHA-256.
      expect(await sha256File(service.store.statePath(manifest.sha256))).toBe(manifest.sha256);
      const query = " So:";
      const reference = await service.graft(manifest.sha256, query, { maxTokens: 4 });
      expect(reference.tier).toBe("hot");

      // Warm: the slots forget the block; the bytes are still in memory.
      service.pool.evict(manifest.sha256);
      const warm = await service.graft(manifest.sha256, query, { maxTokens: 4 });
      expect(warm.tier).toBe("warm");
      expect(warm.outputSha256).toBe(reference.outputSha256);

      // Cold: out of memory and out of the slots; read once from disk, checked, then loaded.
      service.state.arena?.tier.remove(manifest.sha256);
      service.pool.evict(manifest.sha256);
      const cold = await service.graft(manifest.sha256, query, { maxTokens: 4 });
      expect(cold.tier).toBe("cold");
      expect(cold.outputSha256).toBe(reference.outputSha256);
      expect(service.state.arena?.tier.has(manifest.sha256)).toBe(true);

      // A flipped byte on disk: refused before any load and quarantined.
      service.state.arena?.tier.remove(manifest.sha256);
      service.pool.evict(manifest.sha256);
      const path = service.store.statePath(manifest.sha256);
      const bytes = readFileSync(path);
      bytes[bytes.length - 10] = (bytes[bytes.length - 10] as number) ^ 0xff;
      writeFileSync(path, bytes);
      const err = await service.graft(manifest.sha256, query, { maxTokens: 4 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DomainError);
      expect((err as DomainError).code).toBe("block_corrupt");
      expect(service.list().some((m) => m.sha256 === manifest.sha256)).toBe(false);
    } finally {
      await service.close();
    }
  });

  it("loads of one warm block at once, and its file written meanwhile, each see the block's own bytes", async () => {
    const service = await BlockService.open({
      engine,
      dataDir: fresh("data"),
      warmBudgetBytes: 64 * 2 ** 20,
    });
    try {
      const memory = service.state.arena;
      if (!memory) throw new Error("no memory path");
      const text = Array.from({ length: 40 }, (_, k) => `shared fact${k} gamma delta`).join(" ");
      const manifest = await service.deposit(text);
      const path = service.store.statePath(manifest.sha256);
      const original = readFileSync(path);
      const tokens = Array.from({ length: manifest.tokenCount }, (_, i) => original.readUInt32LE(12 + 4 * i));
      const [a, b] = [engine.slot(0), engine.slot(1)];
      const dir = fresh("copies");
      // A load writes llama.cpp's frame over the end of the token list while it runs: without one
      // use of a range at a time, the other load read it as its last tokens, and the file written
      // beside the loads held it (seen on the H200 as a fetched block's corrupt disk copy).
      for (let round = 0; round < 12; round++) {
        const lease = memory.tier.acquire(manifest.sha256);
        if (!lease) throw new Error("not warm");
        const copy = join(dir, `copy-${round}.state`);
        await Promise.all([
          memory.restore(a, manifest, path),
          memory.restore(b, manifest, path),
          memory.writeFile(copy, lease.range),
        ]);
        lease.release();
        expect(a.contextTokens).toEqual(tokens);
        expect(b.contextTokens).toEqual(tokens);
        expect(readFileSync(copy).equals(original)).toBe(true);
      }
      const { arena, offset, length } = memory.tier.acquire(manifest.sha256)?.range ?? expect.fail();
      expect(await memory.api.hashRange(arena, offset, length)).toBe(manifest.sha256);
    } finally {
      await service.close();
    }
  });
});
