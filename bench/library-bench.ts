/**
 * `bench library`: deposit N blocks of T tokens (resumable: an index of deposited blocks is kept
 * in the data folder), then access blocks at given depths of the library in random order, cold
 * (page cache dropped, from disk, hash-checked) and warm (from the RAM tier), each access
 * verifying the block's probe hash after the restore (a graft with `verifyProbe`: one more
 * decode step and the full probability vector hashed, inside the timed access) and evaluating a
 * short query. A block that fails its probe check is quarantined by the graft; it is counted, and
 * its later accesses are skipped (a resumed run deposits it again).
 */
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Token } from "node-llama-cpp";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { Engine, type EngineOptions, type KvType } from "../gpu-node/engine/engine.js";
import { evaluateProbe } from "../gpu-node/engine/probe.js";
import { quantile, randomTokens } from "../gpu-node/verify.js";
import { DomainError } from "../shared/errors.js";
import { Xoshiro128 } from "../shared/random.js";
import { dropPageCache } from "./page-cache.js";

export interface LibraryBenchOptions {
  modelPath: string;
  blocks: number;
  blockTokens: number;
  depths: number[];
  accesses: number;
  kv: KvType;
  dataDir: string;
  engine: Pick<EngineOptions, "binary" | "threads">;
  /** Drop the page cache before each cold access (default true; tests on shared machines pass false). */
  dropPageCache?: boolean;
  log: (line: string) => void;
}

export interface DepthResult {
  depth: number;
  block: number;
  coldMedianMs: number;
  coldP95Ms: number;
  warmMedianMs: number;
  warmP95Ms: number;
  probeChecks: number;
  /** Accesses refused with `block_probe_mismatch`. */
  probeMismatches: number;
  /** Accesses skipped because an earlier probe mismatch quarantined the block. */
  skipped: number;
}

export interface LibraryBenchResult {
  blocks: number;
  blockTokens: number;
  libraryTokens: number;
  bytesOnDisk: number;
  depositSeconds: number;
  resumedBlocks: number;
  depths: DepthResult[];
  /** Post-restore probe checks run by the block service during the accesses. */
  probeChecks: number;
  probeMismatches: number;
  /** Fewest nonzero probabilities hashed by one check: the vocabulary size for a random-weight model. */
  probeEntries: number | null;
  allProbesEqual: boolean;
  cacheDropped: boolean;
  vramBaselineBytes: number | null;
  vramPeakBytes: number | null;
  model: unknown;
  engine: unknown;
}

const QUERY = " Question: continue. Answer:";

/** Deposits (or resumes) the library and measures access time by depth. */
export async function benchLibrary(o: LibraryBenchOptions): Promise<LibraryBenchResult> {
  await mkdir(o.dataDir, { recursive: true });
  const engine = await Engine.open({
    ...o.engine,
    modelPath: o.modelPath,
    slots: 2,
    contextSize: o.blockTokens + 64,
    kvType: o.kv,
  });
  const vram = async () => (engine.llama.gpu === false ? null : (await engine.llama.getVramState()).used);
  // The baseline is the same server without a library after it has served one prompt of a
  // block's length (compute buffers are allocated at the first evaluation, library or not).
  const warmUp = engine.slot(0);
  await warmUp.evaluateWithoutGeneratingNewTokens(
    randomTokens(new Xoshiro128("warm-up"), o.blockTokens, engine.vocabSize),
  );
  await evaluateProbe(warmUp, 300 as Token, engine.vocabSize);
  await warmUp.clearHistory();
  const vramBaseline = await vram();
  let vramPeak = vramBaseline;
  const sampleVram = async () => {
    const v = await vram();
    if (v !== null) vramPeak = Math.max(vramPeak ?? 0, v);
  };
  const blocks = await BlockService.open({ engine, dataDir: o.dataDir, warmBudgetBytes: 8 * 2 ** 30 });
  try {
    const indexPath = join(o.dataDir, "library-index.json");
    const index: string[] = existsSync(indexPath)
      ? (JSON.parse(await readFile(indexPath, "utf8")) as string[])
      : [];
    const resumed = index.filter((sha) => blocks.store.has(sha)).length;
    const started = performance.now();
    for (let i = 0; i < o.blocks; i++) {
      if (index[i] && blocks.store.has(index[i] as string)) continue;
      const tokens = randomTokens(
        new Xoshiro128(`library-${o.blockTokens}-${i}`),
        o.blockTokens,
        engine.vocabSize,
      );
      const manifest = await blocks.depositTokens(tokens, `library block ${i} of ${o.blockTokens} tokens`);
      index[i] = manifest.sha256;
      await writeFile(`${indexPath}.tmp`, JSON.stringify(index));
      await rename(`${indexPath}.tmp`, indexPath);
      const done = i + 1;
      const elapsed = (performance.now() - started) / 1000;
      o.log(
        `deposited ${done}/${o.blocks} (${(done * o.blockTokens).toLocaleString("en-US")} tokens, ${elapsed.toFixed(0)} s, ` +
          `~${((elapsed / Math.max(1, done - resumed)) * (o.blocks - done)).toFixed(0)} s left)`,
      );
      await sampleVram();
    }
    const depositSeconds = (performance.now() - started) / 1000;
    const rng = new Xoshiro128("library-access-order");
    const plan = o.depths.flatMap((depth) => Array.from({ length: o.accesses }, () => depth));
    for (let i = plan.length - 1; i > 0; i--) {
      const j = rng.next() % (i + 1);
      [plan[i], plan[j]] = [plan[j] as number, plan[i] as number];
    }
    type Tally = { cold: number[]; warm: number[]; mismatches: number; skipped: number };
    const times = new Map<number, Tally>();
    const checksBefore = blocks.probes.counts.checks;
    let cacheDropped = true;
    const blockAt = (depth: number) => Math.min(o.blocks - 1, Math.floor(depth / o.blockTokens));
    for (const depth of plan) {
      const sha = index[blockAt(depth)] as string;
      const entry = times.get(depth) ?? { cold: [], warm: [], mismatches: 0, skipped: 0 };
      times.set(depth, entry);
      if (!blocks.store.has(sha)) {
        entry.skipped++;
        continue;
      }
      try {
        // Cold: nothing resident, nothing in RAM, page cache dropped.
        blocks.pool.evict(sha);
        await blocks.dropRamCopy(sha);
        cacheDropped &&= o.dropPageCache !== false && (await dropPageCache());
        let t = performance.now();
        const cold = await blocks.graft(sha, QUERY, { maxTokens: 1, verifyProbe: true });
        entry.cold.push(performance.now() - t);
        if (cold.tier !== "cold") throw new Error(`expected a cold access, got ${cold.tier}`);
        // Warm: the RAM copy, not the slot.
        await blocks.prefetch(sha, "warm");
        blocks.pool.evict(sha);
        t = performance.now();
        const warm = await blocks.graft(sha, QUERY, { maxTokens: 1, verifyProbe: true });
        entry.warm.push(performance.now() - t);
        if (warm.tier !== "warm") throw new Error(`expected a warm access, got ${warm.tier}`);
        await blocks.dropRamCopy(sha);
      } catch (err) {
        if (!(err instanceof DomainError && err.code === "block_probe_mismatch")) throw err;
        entry.mismatches++;
        o.log(`block ${blockAt(depth)} (${sha}) failed its probe check and was quarantined`);
      }
      await sampleVram();
    }
    const probeChecks = blocks.probes.counts.checks - checksBefore;
    const probeMismatches = [...times.values()].reduce((n, e) => n + e.mismatches, 0);
    const depths = o.depths.map((depth) => {
      const e = times.get(depth) ?? { cold: [], warm: [], mismatches: 0, skipped: 0 };
      return {
        depth,
        block: blockAt(depth),
        coldMedianMs: quantile(e.cold, 0.5),
        coldP95Ms: quantile(e.cold, 0.95),
        warmMedianMs: quantile(e.warm, 0.5),
        warmP95Ms: quantile(e.warm, 0.95),
        probeChecks: e.cold.length + e.warm.length + e.mismatches,
        probeMismatches: e.mismatches,
        skipped: e.skipped,
      };
    });
    return {
      blocks: o.blocks,
      blockTokens: o.blockTokens,
      libraryTokens: o.blocks * o.blockTokens,
      bytesOnDisk: blocks.store.diskUsage(),
      depositSeconds,
      resumedBlocks: resumed,
      depths,
      probeChecks,
      probeMismatches,
      probeEntries: blocks.probes.fewestEntries,
      // Every access ran its two checks (the service counts them) and none mismatched.
      allProbesEqual: probeMismatches === 0 && probeChecks === plan.length * 2,
      cacheDropped,
      vramBaselineBytes: vramBaseline,
      vramPeakBytes: vramPeak,
      model: engine.modelFingerprint,
      engine: engine.engineFingerprint,
    };
  } finally {
    await blocks.close();
    await engine.dispose();
  }
}
