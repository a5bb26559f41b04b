/**
 * The block service on real llama.cpp inference with generated tiny models: deposits, grafts
 * over the hot, warm and cold tiers, corruption handling, LRU eviction, fingerprint checks and
 * the bounded slot queue.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { sha256File } from "../gpu-node/blocks/store/block-store.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { evaluateProbe, probeTokenFor } from "../gpu-node/engine/probe.js";
import { blockManifest } from "../shared/block-manifest.js";
import { DomainError } from "../shared/errors.js";
import { sha256Hex, sha256OfTokens } from "../shared/hash.js";
import type { BlockManifest } from "../shared/protocol.js";
import { syntheticModel } from "./helpers/models.js";

const CONTEXT = 1024;
const QUERY = " What follows from this? Answer:";
const MAX_TOKENS = 8;

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function freshDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `kvgraft-svc-${label}-`));
  roots.push(dir);
  return dir;
}

/** A text of ~150 tokens (~11 per phrase; longer than gemma3's 64-token window), distinct per label. */
function blockText(label: string, phrases = 14): string {
  return Array.from({ length: phrases }, (_, k) => `${label} fact${k} alpha beta`).join(" ");
}

/** Opens a service on `dataDir` (or a fresh one) with its warm tier inside the test's temp dir. */
async function openService(
  engine: Engine,
  options: { dataDir?: string; warmBudgetBytes?: number; maxWaiting?: number } = {},
): Promise<BlockService> {
  const dataDir = options.dataDir ?? freshDir("data");
  return BlockService.open({
    engine,
    dataDir,
    warmDir: join(freshDir("warm"), "w"),
    ...(options.warmBudgetBytes !== undefined ? { warmBudgetBytes: options.warmBudgetBytes } : {}),
    ...(options.maxWaiting !== undefined ? { maxWaiting: options.maxWaiting } : {}),
  });
}

async function expectDomainError(
  promise: Promise<unknown>,
  status: number,
  code: string,
): Promise<DomainError> {
  const err = await promise.then(
    () => {
      throw new Error(`expected a ${status} ${code}, got success`);
    },
    (e: unknown) => e,
  );
  expect(err, String(err)).toBeInstanceOf(DomainError);
  expect((err as DomainError).code).toBe(code);
  expect((err as DomainError).status).toBe(status);
  return err as DomainError;
}

/**
 * Empties every slot by hand. Only between requests, for slots the service does not count as
 * holding a block (a fresh service, or after `pool.evict`): a slot the pool forgot keeps its
 * tokens until its next use clears it, which would hide what a failed request left behind.
 */
async function clearSlots(engine: Engine): Promise<void> {
  for (const s of engine.slots) await s.clearHistory();
}

/** Every slot of the engine is empty (no tokens left behind by a failed load). */
function expectSlotsClean(engine: Engine): void {
  expect(engine.slots.map((s) => s.nextTokenIndex)).toEqual(engine.slots.map(() => 0));
}

/** Forces the next graft of `id` to come from disk: not resident in a slot, no RAM copy. */
async function makeCold(svc: BlockService, id: string): Promise<void> {
  svc.pool.evict(id);
  await svc.dropRamCopy(id);
}

function quarantineNames(dataDir: string): string[] {
  return readdirSync(join(dataDir, "quarantine")).map((n) => n.replace(/\.\d+$/, ""));
}

describe("BlockService on tiny-llama", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 2, contextSize: CONTEXT });
  });
  afterAll(() => engine?.dispose());

  it("concurrent deposits of the same text give one block", async () => {
    const svc = await openService(engine);
    try {
      const text = blockText("concurrent");
      const other = blockText("other");
      const [a, b, c, d] = await Promise.all([
        svc.deposit(text),
        svc.deposit(text),
        svc.deposit(text),
        svc.deposit(other),
      ]);
      expect(b.sha256).toBe(a.sha256);
      expect(c.sha256).toBe(a.sha256);
      expect(d.sha256).not.toBe(a.sha256);
      expect(a.textSha256).toBe(await sha256Hex(text));
      expect(a.tokenCount).toBe(engine.tokenize(text).length);
      expect(a.tokenCount).toBeGreaterThan(100);
      expect(
        svc
          .list()
          .map((m) => m.sha256)
          .sort(),
      ).toEqual([a.sha256, d.sha256].sort());
    } finally {
      await svc.close();
    }
  });

  it("depositing the same text again later gives the same block (content addressing)", async () => {
    const svc = await openService(engine);
    try {
      const text = blockText("again");
      const first = await svc.deposit(text);
      const second = await svc.deposit(text);
      expect(second.sha256).toBe(first.sha256);
      expect(svc.list()).toHaveLength(1);
    } finally {
      await svc.close();
    }
  });

  it("a flipped byte found by verify: 409 block_corrupt, files quarantined, hot and warm copies dropped", async () => {
    const dataDir = freshDir("corrupt");
    const svc = await openService(engine, { dataDir });
    try {
      const m = await svc.deposit(blockText("flip"));
      const keep = await svc.deposit(blockText("keep"));
      expect((await svc.verify(m.sha256)).ok).toBe(true);
      expect(await svc.prefetch(m.sha256, "warm")).toBe("warm");
      // Resident in a slot and in RAM before the damage.
      expect(svc.snapshot().hot).toContain(m.sha256);
      expect(svc.snapshot().warm).toContain(m.sha256);
      const path = svc.store.statePath(m.sha256);
      const bytes = readFileSync(path);
      bytes[Math.floor(bytes.length / 3)] = (bytes[Math.floor(bytes.length / 3)] ?? 0) ^ 0x10;
      writeFileSync(path, bytes);

      await expectDomainError(svc.verify(m.sha256), 409, "block_corrupt");
      expect(svc.list().map((x) => x.sha256)).toEqual([keep.sha256]);
      expect(svc.snapshot().hot).not.toContain(m.sha256);
      expect(svc.snapshot().warm).not.toContain(m.sha256);
      expect(quarantineNames(dataDir).sort()).toEqual([`${m.sha256}.json`, `${m.sha256}.state`]);
      expect(readdirSync(join(dataDir, "blocks")).sort()).toEqual([
        `${keep.sha256}.json`,
        `${keep.sha256}.state`,
      ]);
      // Neither the slot copy nor the RAM copy serves it any more.
      await expectDomainError(svc.graft(m.sha256, QUERY, { maxTokens: 4 }), 404, "block_not_found");
      // The other block is untouched.
      expect((await svc.verify(keep.sha256)).ok).toBe(true);
    } finally {
      await svc.close();
    }
  });

  it("a truncated file found by a cold graft: 409 block_corrupt, quarantined, not listed, slot clean", async () => {
    const dataDir = freshDir("truncated");
    const svc = await openService(engine, { dataDir });
    try {
      const m = await svc.deposit(blockText("truncate"));
      await makeCold(svc, m.sha256);
      await clearSlots(engine);
      truncateSync(svc.store.statePath(m.sha256), Math.floor(m.sizeBytes / 2));
      await expectDomainError(svc.graft(m.sha256, QUERY, { maxTokens: 4 }), 409, "block_corrupt");
      expect(svc.list()).toEqual([]);
      expect(svc.snapshot().hot).toEqual([]);
      expect(svc.snapshot().warm).toEqual([]);
      expect(quarantineNames(dataDir).sort()).toEqual([`${m.sha256}.json`, `${m.sha256}.state`]);
      expectSlotsClean(engine);
      await expectDomainError(svc.graft(m.sha256, QUERY, { maxTokens: 4 }), 404, "block_not_found");
      const plain = await svc.generate("hello", { maxTokens: 4 });
      expect(plain.tokensOut).toBeGreaterThan(0);
    } finally {
      await svc.close();
    }
  });

  it("a manifest whose state file is gone at start is reported and set aside", async () => {
    const dataDir = freshDir("orphan");
    const first = await openService(engine, { dataDir });
    const lost = await first.deposit(blockText("lost"));
    const kept = await first.deposit(blockText("kept"));
    await first.close();
    rmSync(join(dataDir, "blocks", `${lost.sha256}.state`));

    const svc = await openService(engine, { dataDir });
    try {
      expect(svc.recovery.manifestsWithoutFiles).toEqual([lost.sha256]);
      expect(svc.list().map((m) => m.sha256)).toEqual([kept.sha256]);
      expect(quarantineNames(dataDir)).toEqual([`${lost.sha256}.json`]);
      await expectDomainError(svc.graft(lost.sha256, QUERY, { maxTokens: 4 }), 404, "block_not_found");
      expect((await svc.verify(kept.sha256)).ok).toBe(true);
    } finally {
      await svc.close();
    }
  });

  it("keeps the 2 most recently used of 3 blocks in a warm tier that holds 2", async () => {
    // Deposit first with the tier off, so the budget can be sized from the real block sizes.
    const dataDir = freshDir("warm-lru");
    const setup = await openService(engine, { dataDir, warmBudgetBytes: 0 });
    const [a, b, c] = [
      await setup.deposit(blockText("warmA")),
      await setup.deposit(blockText("warmB")),
      await setup.deposit(blockText("warmC")),
    ] as [BlockManifest, BlockManifest, BlockManifest];
    await setup.close();
    const sizes = [a, b, c].map((m) => m.sizeBytes);
    const budget = 2 * Math.max(...sizes);
    expect(3 * Math.min(...sizes)).toBeGreaterThan(budget);

    const svc = await openService(engine, { dataDir, warmBudgetBytes: budget });
    try {
      expect(await svc.prefetch(a.sha256, "warm")).toBe("warm");
      expect(await svc.prefetch(b.sha256, "warm")).toBe("warm");
      // Use A (a graft served from RAM), so B is now the least recently used copy.
      svc.pool.evict(a.sha256);
      expect((await svc.graft(a.sha256, QUERY, { maxTokens: 2 })).tier).toBe("warm");
      expect(await svc.prefetch(c.sha256, "warm")).toBe("warm");
      expect(svc.snapshot().warm.sort()).toEqual([a.sha256, c.sha256].sort());
      expect(svc.snapshot().warmBytes).toBe(a.sizeBytes + c.sizeBytes);
      expect(svc.snapshot().warmBytes).toBeLessThanOrEqual(budget);
      expect(svc.snapshot().warmBudgetBytes).toBe(budget);
      // B now comes from disk.
      svc.pool.evict(b.sha256);
      expect((await svc.graft(b.sha256, QUERY, { maxTokens: 2 })).tier).toBe("cold");
    } finally {
      await svc.close();
    }
  });

  it("with 2 slots and 3 blocks, the least recently grafted block is the one no longer hot", async () => {
    const svc = await openService(engine, { warmBudgetBytes: 0 });
    try {
      const a = await svc.deposit(blockText("slotA"));
      const b = await svc.deposit(blockText("slotB"));
      const c = await svc.deposit(blockText("slotC"));
      // Deposits use both slots, so at most the last one is still resident.
      for (const m of [a, b, c]) svc.pool.evict(m.sha256);
      const tiers: string[] = [];
      for (const m of [a, b, c, b, a])
        tiers.push((await svc.graft(m.sha256, QUERY, { maxTokens: 2 })).tier ?? "");
      // A, B into the two slots; C replaces A (LRU); B is hot; A replaces C (least recently grafted).
      expect(tiers).toEqual(["cold", "cold", "cold", "hot", "cold"]);
      expect(svc.snapshot().hot.sort()).toEqual([a.sha256, b.sha256].sort());
      expect(svc.snapshot().hot).not.toContain(c.sha256);
      expect(svc.snapshot().hits).toEqual({ hot: 1, warm: 0, cold: 4 });
    } finally {
      await svc.close();
    }
  });

  it("two concurrent grafts of one hot block run in both slots (a second copy), not one after the other", async () => {
    const svc = await openService(engine);
    try {
      const m = await svc.deposit(blockText("second-copy"));
      const first = await svc.graft(m.sha256, QUERY, { maxTokens: MAX_TOKENS });
      expect(first.tier).toBe("hot");
      const both = await Promise.all([
        svc.graft(m.sha256, QUERY, { maxTokens: MAX_TOKENS }),
        svc.graft(m.sha256, QUERY, { maxTokens: MAX_TOKENS }),
      ]);
      // The second found the holder busy and the other slot free: it copied the block there
      // instead of waiting (admission lets in only as much work as there are slots). The arena
      // path (our engine build) copies from the holder on the device, a hot restore; the file
      // path loads the warm tier's copy.
      const copied = svc.state.arena ? "hot" : "warm";
      expect(both.map((r) => r.tier)).toEqual(["hot", copied]);
      expect(both.map((r) => r.outputSha256)).toEqual([first.outputSha256, first.outputSha256]);
      expect(svc.pool.hotBlocks()).toEqual([m.sha256, m.sha256]);
    } finally {
      await svc.close();
    }
  });

  it("refuses a block made under another KV type (409 engine_mismatch); accepting the mismatch is checked and leaves the slot clean", async () => {
    const dataDir = freshDir("q8");
    const f16 = await openService(engine, { dataDir });
    const m = await f16.deposit(blockText("kvtype"));
    await f16.close();

    const q8 = await Engine.open({
      modelPath: syntheticModel("tiny-llama"),
      slots: 2,
      contextSize: CONTEXT,
      kvType: "q8_0",
    });
    try {
      expect(q8.engineFingerprint.id).not.toBe(engine.engineFingerprint.id);
      const svc = await openService(q8, { dataDir });
      try {
        expect(svc.list().map((x) => x.sha256)).toEqual([m.sha256]);
        await expectDomainError(svc.graft(m.sha256, QUERY, { maxTokens: 4 }), 409, "engine_mismatch");
        await expectDomainError(svc.verify(m.sha256), 409, "engine_mismatch");
        await expectDomainError(svc.prefetch(m.sha256, "hot"), 409, "engine_mismatch");
        expectSlotsClean(q8);
        // Opting in attempts the load, and the result is checked: a 409, never a 5xx or a bad answer.
        const attempt = await svc.graft(m.sha256, QUERY, { maxTokens: 4, acceptEngineMismatch: true }).then(
          (r) => r,
          (e: unknown) => e,
        );
        expectSlotsClean(q8);
        expect(svc.snapshot().hot).toEqual([]);
        expect(svc.snapshot().slots.busy).toBe(0);
        const plain = await svc.generate("hello there", { maxTokens: 4 });
        expect(plain.tokensOut).toBeGreaterThan(0);
        expect(svc.list()).toHaveLength(1);
        await expectDomainError(Promise.reject(attempt), 409, "state_incompatible");
      } finally {
        await svc.close();
      }
    } finally {
      await q8.dispose();
    }
  });

  it("accepting an engine mismatch checks the probe hash: equal → same output, different → 409 probe_mismatch and a clean slot", async () => {
    const dataDir = freshDir("probe");
    const home = await openService(engine, { dataDir });
    const m = await home.deposit(blockText("probe"));
    const reference = await home.graft(m.sha256, QUERY, { maxTokens: MAX_TOKENS });
    await home.close();

    // Another batch size: another fingerprint, but the state loads and computes the same.
    const other = await Engine.open({
      modelPath: syntheticModel("tiny-llama"),
      slots: 2,
      contextSize: CONTEXT,
      batchSize: 256,
    });
    try {
      expect(other.engineFingerprint.id).not.toBe(engine.engineFingerprint.id);
      const svc = await openService(other, { dataDir });
      try {
        await expectDomainError(svc.graft(m.sha256, QUERY, { maxTokens: 4 }), 409, "engine_mismatch");
        const accepted = await svc.graft(m.sha256, QUERY, {
          maxTokens: MAX_TOKENS,
          acceptEngineMismatch: true,
        });
        expect(accepted.tier).toBe("cold");
        expect(accepted.outputSha256).toBe(reference.outputSha256);
      } finally {
        await svc.close();
      }

      // The manifest's probe hash no longer matches what the state computes here.
      const manifestPath = join(dataDir, "blocks", `${m.sha256}.json`);
      const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as BlockManifest;
      writeFileSync(
        manifestPath,
        JSON.stringify({
          ...manifest,
          probe: { ...manifest.probe, sha256: await sha256Hex("another probe") },
        }),
      );
      const tampered = await openService(other, { dataDir });
      await clearSlots(other);
      try {
        await expectDomainError(
          tampered.graft(m.sha256, QUERY, { maxTokens: 4, acceptEngineMismatch: true }),
          409,
          "probe_mismatch",
        );
        expectSlotsClean(other);
        expect(tampered.snapshot().hot).toEqual([]);
        expect(tampered.snapshot().slots.busy).toBe(0);
        const plain = await tampered.generate("hello there", { maxTokens: 4 });
        expect(plain.tokensOut).toBeGreaterThan(0);
      } finally {
        await tampered.close();
      }
    } finally {
      await other.dispose();
    }
  });

  it("a block loads only where its fingerprint matches: another slot count is refused or works, never a 5xx", async () => {
    const dataDir = freshDir("slots");
    const home = await openService(engine, { dataDir });
    const m = await home.deposit(blockText("slot-count"));
    const reference = await home.graft(m.sha256, QUERY, { maxTokens: MAX_TOKENS });
    await home.close();

    const three = await Engine.open({
      modelPath: syntheticModel("tiny-llama"),
      slots: 3,
      contextSize: CONTEXT,
    });
    try {
      const svc = await openService(three, { dataDir });
      try {
        const outcome = await svc.graft(m.sha256, QUERY, { maxTokens: MAX_TOKENS }).then(
          (r) => r,
          (e: unknown) => e,
        );
        if (outcome instanceof DomainError) {
          // A clear refusal before loading: the fingerprints must then differ.
          expect(outcome.status).toBe(409);
          expect(three.engineFingerprint.id).not.toBe(engine.engineFingerprint.id);
        } else {
          expect(outcome, String(outcome)).not.toBeInstanceOf(Error);
          expect((outcome as { outputSha256: string }).outputSha256).toBe(reference.outputSha256);
        }
        expectSlotsClean(three);
      } finally {
        await svc.close();
      }
    } finally {
      await three.dispose();
    }
  });
});

/**
 * Builds a block by hand on one slot (prefill, save, probe) as another node would, so a 1-slot
 * service can import it.
 */
async function handMadeBlock(
  engine: Engine,
  text: string,
  dir: string,
): Promise<{ path: string; manifest: BlockManifest }> {
  const tokens = engine.tokenize(text);
  const tokensSha256 = await sha256OfTokens(tokens);
  const probeToken = probeTokenFor(tokensSha256, engine.vocabSize);
  const seq = engine.slot(0);
  const path = join(dir, "hand-made.state");
  await seq.clearHistory();
  await seq.evaluateWithoutGeneratingNewTokens(tokens);
  await seq.saveStateToFile(path);
  const probe = await evaluateProbe(seq, probeToken as Token, engine.vocabSize);
  await seq.clearHistory();
  const manifest = blockManifest(
    {
      tokenCount: tokens.length,
      tokensSha256,
      textSha256: await sha256Hex(text),
      model: engine.modelFingerprint,
      engine: engine.engineFingerprint,
      probe: { token: probeToken, sha256: probe.sha256 },
    },
    { sha256: await sha256File(path), sizeBytes: readFileSync(path).length },
  );
  return { path, manifest };
}

describe("BlockService with one slot", () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 1, contextSize: CONTEXT });
  });
  afterAll(() => engine?.dispose());

  it("three concurrent grafts with maxWaiting 1: one 429 queue_full with retryAfterS, the others succeed", async () => {
    const svc = await openService(engine, { maxWaiting: 1, warmBudgetBytes: 0 });
    try {
      const { path, manifest } = await handMadeBlock(engine, blockText("queue"), freshDir("hand"));
      const imported = await svc.importFile(path, manifest);
      expect(imported.sha256).toBe(manifest.sha256);
      expect(svc.snapshot().queue.capacity).toBe(1);

      const results = await Promise.allSettled([
        svc.graft(manifest.sha256, QUERY, { maxTokens: MAX_TOKENS }),
        svc.graft(manifest.sha256, QUERY, { maxTokens: MAX_TOKENS }),
        svc.graft(manifest.sha256, QUERY, { maxTokens: MAX_TOKENS }),
      ]);
      const rejected = results.filter((r) => r.status === "rejected");
      const fulfilled = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      expect(rejected).toHaveLength(1);
      const err = (rejected[0] as PromiseRejectedResult).reason as DomainError;
      expect(err).toBeInstanceOf(DomainError);
      expect(err.status).toBe(429);
      expect(err.code).toBe("queue_full");
      expect(err.retryAfterS).toBeGreaterThan(0);
      expect(fulfilled).toHaveLength(2);
      // The first one loaded the block from disk; the queued one found it resident.
      expect(fulfilled.map((r) => r.tier)).toEqual(["cold", "hot"]);
      expect(fulfilled[1]?.outputSha256).toBe(fulfilled[0]?.outputSha256);
      expect(fulfilled[0]?.tokensOut).toBeGreaterThan(0);
      // The queue drained: the next request is served.
      expect(svc.snapshot().queue.depth).toBe(0);
      expect((await svc.graft(manifest.sha256, QUERY, { maxTokens: MAX_TOKENS })).outputSha256).toBe(
        fulfilled[0]?.outputSha256,
      );
    } finally {
      await svc.close();
    }
  });

  // Last in this group: while the bug it guards against is present, the hung deposit keeps the
  // only slot leased for good.
  it("a deposit on a 1-slot engine completes (or is refused clearly) instead of waiting forever", async () => {
    const svc = await openService(engine);
    try {
      const outcome = await Promise.race([
        svc.deposit(blockText("one-slot")).then(
          (m) => m,
          (e: unknown) => e,
        ),
        new Promise((resolve) => setTimeout(() => resolve("still waiting after 3 s"), 3000)),
      ]);
      expect(outcome).not.toBe("still waiting after 3 s");
      if (outcome instanceof Error) expect(outcome).toBeInstanceOf(DomainError);
      else expect((await svc.verify((outcome as BlockManifest).sha256)).ok).toBe(true);
    } finally {
      await svc.close();
    }
  });
});

describe.each(["tiny-llama", "tiny-gemma3"] as const)("hot, warm and cold grafts on %s", (preset) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open({
      modelPath: syntheticModel(preset),
      slots: 2,
      contextSize: CONTEXT,
      swaFullCache: true,
    });
  });
  afterAll(() => engine?.dispose());

  it("give identical greedy output, equal to a fresh prefill's, and report the tier used", async () => {
    const svc = await openService(engine);
    // ~200 tokens: past gemma3's 64-token window, short of 256 (see the length test below).
    const text = blockText(`tiers-${preset}`, 10);
    try {
      const m = await svc.deposit(text);
      expect(m.tokenCount).toBeGreaterThan(150);
      expect(m.tokenCount).toBeLessThan(256);

      const hot = await svc.graft(m.sha256, QUERY, { maxTokens: MAX_TOKENS });
      expect(hot.tier).toBe("hot");

      expect(await svc.prefetch(m.sha256, "warm")).toBe("warm");
      svc.pool.evict(m.sha256);
      expect(svc.snapshot().hot).not.toContain(m.sha256);
      const warm = await svc.graft(m.sha256, QUERY, { maxTokens: MAX_TOKENS });
      expect(warm.tier).toBe("warm");

      await makeCold(svc, m.sha256);
      expect(svc.snapshot().warm).toEqual([]);
      const cold = await svc.graft(m.sha256, QUERY, { maxTokens: MAX_TOKENS });
      expect(cold.tier).toBe("cold");
      // A cold graft leaves a RAM copy behind (on the file path in the background; a prefetch joins it).
      expect(await svc.prefetch(m.sha256, "warm")).toBe("warm");
      expect(svc.snapshot().warm).toContain(m.sha256);

      // Hot again after the cold graft: the block is resident.
      const hotAgain = await svc.graft(m.sha256, QUERY, { maxTokens: MAX_TOKENS });
      expect(hotAgain.tier).toBe("hot");

      for (const r of [hot, warm, cold, hotAgain]) {
        expect(r.blockSha256).toBe(m.sha256);
        expect(r.tokensOut).toBe(MAX_TOKENS);
        expect(r.outputSha256).toBe(await sha256OfTokens(r.tokens));
      }
      expect(new Set([hot, warm, cold, hotAgain].map((r) => r.outputSha256)).size).toBe(1);
      expect(svc.snapshot().hits).toEqual({ hot: 2, warm: 1, cold: 1 });

      // The reference: the block's tokens prefilled fresh, then the same query, greedy.
      await svc.close();
      const seq = engine.slot(0);
      await seq.clearHistory();
      await seq.evaluateWithoutGeneratingNewTokens(engine.tokenize(text));
      const fresh: number[] = [];
      for await (const t of seq.evaluate(engine.model.tokenize(QUERY), { temperature: 0 })) {
        fresh.push(t);
        if (fresh.length >= MAX_TOKENS) break;
      }
      await seq.clearHistory();
      expect(fresh).toEqual(hot.tokens);
    } finally {
      await svc.close();
    }
  });

  // llama.cpp on CPU does not restore tiny-gemma3 bit-exactly for prefixes of about 256-318 tokens
  // (its sliding window meets the 256-cell KV padding; measured 2e-5 differences in the probe
  // vector). The product promise there is "never silently wrong": such a deposit is refused.
  it("deposits blocks of every length around the 256-cell padding, or refuses them as unverified", async () => {
    const svc = await openService(engine, { warmBudgetBytes: 0 });
    const outcomes: string[] = [];
    try {
      // Prefixes of one long text at lengths around the KV cache's 256-cell padding.
      const long = engine.tokenize(blockText(`lengths-${preset}`, 40));
      for (const n of [250, 260, 300, 330]) {
        const text = engine.model.detokenize(long.slice(1, n));
        const count = engine.tokenize(text).length;
        const outcome = await svc.deposit(text).then(
          () => "ok",
          (e: unknown) => (e instanceof DomainError ? e.code : String(e)),
        );
        outcomes.push(`${count}:${outcome}`);
      }
    } finally {
      await svc.close();
    }
    const allowed = preset === "tiny-llama" ? [":ok"] : [":ok", ":block_unverified"];
    expect(
      outcomes.every((o) => allowed.some((a) => o.endsWith(a))),
      outcomes.join(" "),
    ).toBe(true);
    expect(svc.list().length).toBe(outcomes.filter((o) => o.endsWith(":ok")).length);
  });
});
