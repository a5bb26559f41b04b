/**
 * `bench graft`: recompute (prefill + 1 token) versus hot graft (erase the slot's tail back to
 * the block), warm restore (state file in RAM) and cold restore (file on disk, hash-checked
 * first, page cache dropped where permitted), each followed by the same one-token probe whose
 * probability hash must be equal on every path. Medians over runs after a warm-up, one process.
 * A timed path ends with the probe token evaluated as a graft serves a token (one decode step,
 * greedy). Then, untimed, that token is erased and the probe evaluated again at the same
 * position for its full probability vector (every vocabulary entry), which is hashed: node-llama-cpp
 * hands the vector over as a Map built in JavaScript (a few hundred ms at a 262,144-token
 * vocabulary on a loaded CPU), a cost of the proof, not of serving. `probeCheckMs` times that
 * check separately, as a graft with `verifyProbe` pays it.
 */

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { ProbeGate } from "../gpu-node/blocks/restore/probe-check.js";
import { MemoryTier } from "../gpu-node/blocks/state-path/memory-tier.js";
import { BlockStore } from "../gpu-node/blocks/store/block-store.js";
import { Engine, type EngineOptions, type KvType } from "../gpu-node/engine/engine.js";
import { greedyStep } from "../gpu-node/engine/greedy-step.js";
import { evaluateProbe } from "../gpu-node/engine/probe.js";
import { loadSequenceState } from "../gpu-node/engine/state.js";
import { copySequence, loadSequenceFromMemory, nativeStateApi } from "../gpu-node/engine/state-memory.js";
import { startPowerSampler } from "../gpu-node/telemetry/power.js";
import { quantile, randomTokens } from "../gpu-node/verify.js";
import { manifestFields } from "../shared/block-manifest.js";
import type { BlockManifest } from "../shared/protocol.js";
import { Xoshiro128 } from "../shared/random.js";
import { nativeCallTimer } from "./native-call-timer.js";
import { dropPageCache } from "./page-cache.js";

export interface GraftBenchOptions {
  modelPath: string;
  lengths: number[];
  kvTypes: KvType[];
  runs: number;
  engine: Pick<EngineOptions, "binary" | "threads" | "flashAttention" | "batchSize" | "swaFullCache">;
  dataDir?: string;
  /** Size of the memory tier on our engine build (the largest state must fit). */
  memoryBytes?: number;
  /** Seconds of repeated requests per path while GPU power is sampled (0: no energy figures). */
  energySeconds?: number;
  log: (line: string) => void;
}

/** Energy per request of one path, from power sampling over repeated requests. */
export interface EnergyFigure {
  requests: number;
  seconds: number;
  meanWatts: number;
  whPerRequest: number;
  sampleIntervalMs: number;
}

export interface GraftBenchRow {
  length: number;
  kv: KvType;
  recomputeMs: number;
  /**
   * Erase + the token as a graft serves it: on our engine build one native greedy step
   * (gpu-node/engine/greedy-step.ts), on the npm prebuilt node-llama-cpp's evaluation.
   */
  hotMs: number;
  /** Erase + the same token through node-llama-cpp's evaluation (decode call, then sample call), same run. */
  hotLibraryMs: number;
  warmMs: number;
  /** The warm path's load alone (memory path: one host-to-device copy from the pinned tier), without the token. */
  warmLoadMs: number;
  /** State bytes over warmLoadMs: the restore bandwidth. */
  loadGBps: number;
  /**
   * Parts of the hot step: the tail erase, and the token evaluated without asking for its logits (no
   * output layer, no sampling; hotMs asks for the sampled next token).
   */
  hotEraseMs: number;
  hotDecodeMs: number;
  /**
   * llama.cpp's own time for the hot step's token (llama_perf_context on the engine build: from the
   * decode's start to the synchronize that ends it: graph build, compute, device wait); hotMs minus
   * this and hotEraseMs is the greedy step's thread hop, argmax and JavaScript. Null on the npm
   * prebuilt.
   */
  hotLlamaEvalMs: number | null;
  /**
   * The hot step's native calls as JavaScript waits for them (native-call-timer.ts): decodeBatch
   * (the worker's llama_decode + synchronize and the thread hops; minus hotLlamaEvalMs = the hops
   * and llama.cpp's work before its timer starts) and sampleToken (candidates + sampler chain over
   * the whole vocabulary), on the node-llama-cpp path. hotLibraryMs minus these and hotEraseMs is
   * what lies between and around those calls: node-llama-cpp's evaluation queue in JavaScript and
   * its scheduling of them (main-thread busy time alone: bench/hot-step-loop.ts).
   */
  hotDecodeCallMs: number;
  hotSampleCallMs: number;
  coldMs: number;
  coldHashMs: number;
  /** The post-restore probe check a verified graft adds (probe-check.ts: one decode step, digest, erase). */
  probeCheckMs: number;
  coldCacheDropped: boolean;
  stateBytes: number;
  restoreGBps: number;
  hotSpeedup: number;
  warmSpeedup: number;
  coldSpeedup: number;
  /** Which state path warm and cold used: our engine build's memory path, or node-llama-cpp's files. */
  statePath: "memory" | "file";
  /** Whether the memory tier is page-locked (pinned) host memory. */
  pinned: boolean;
  /** node-llama-cpp's file path in the same run (equal to warm/cold when statePath is "file"). */
  warmFileMs: number;
  coldFileMs: number;
  /** Device-side copy of the hot block into another slot + one token (memory path only). */
  copyMs: number | null;
  /** The copy call alone (cell bookkeeping; llama.cpp copies the data at the next decode). */
  copyCallMs: number | null;
  /**
   * The same token on the copy's target slot without a copy, right after: copyMs minus this is
   * what duplicating the block costs (the call plus the device copy at the next decode).
   */
  copyTargetTokenMs: number | null;
  /** The disk's sequential O_DIRECT read bandwidth, measured on the state file in this run. */
  diskReadGBps: number | null;
  /** Cold time over (state bytes / disk bandwidth): 1.0 means only the read itself. */
  coldOverDiskBound: number | null;
  hashesEqual: boolean;
  /** The probe's full-distribution SHA-256 when every path gave the same (compare across builds). */
  probeSha256: string | null;
  /** Nonzero probabilities that went into each hash (fewest over all paths and runs). */
  probeEntries: number;
  peakVramBytes: number | null;
  energy?: { idleWatts: number; recompute: EnergyFigure; hot: EnergyFigure; warm: EnergyFigure };
}

/** Repeats `request` for at least `seconds` while sampling power; null without nvidia-smi. */
async function measureEnergy(seconds: number, request: () => Promise<unknown>): Promise<EnergyFigure | null> {
  const sampler = startPowerSampler(50);
  if (!sampler) return null;
  const started = performance.now();
  let requests = 0;
  while (performance.now() - started < seconds * 1000) {
    await request();
    requests++;
  }
  const reading = sampler.stop();
  return {
    requests,
    seconds: reading.seconds,
    meanWatts: reading.meanWatts,
    whPerRequest: reading.joules / 3600 / requests,
    sampleIntervalMs: reading.intervalMs,
  };
}

/** The manifest's chunk hashes in the shape the memory tier checks. */
function chunkedHash(store: BlockStore, sha: string) {
  const manifest = store.get(sha);
  if (!manifest.chunks) throw new Error("the bench block has no chunk hashes");
  return { sizeBytes: manifest.sizeBytes, chunkBytes: manifest.chunks.bytes, chunks: manifest.chunks.sha256 };
}

/**
 * Sequential read bandwidth of the disk holding `path` (dd with O_DIRECT, page cache bypassed),
 * in GB/s; null where dd or O_DIRECT is unavailable (tmpfs).
 */
function diskReadGBps(path: string): number | null {
  const started = performance.now();
  const dd = spawnSync("dd", [`if=${path}`, "of=/dev/null", "bs=64M", "iflag=direct"], { encoding: "utf8" });
  const seconds = (performance.now() - started) / 1000;
  const copied = /^(\d+) bytes/m.exec(dd.stderr ?? "");
  if (dd.status !== 0 || !copied) return null;
  return Number(copied[1]) / 1e9 / seconds;
}

/** Mean idle power over `seconds`, or null without nvidia-smi. */
async function idleWatts(seconds: number): Promise<number | null> {
  const sampler = startPowerSampler(50);
  if (!sampler) return null;
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return sampler.stop().meanWatts;
}

const median = (xs: number[]) => quantile(xs, 0.5);

/** Runs the benchmark and returns one row per (length, KV type). */
export async function benchGraft(
  o: GraftBenchOptions,
): Promise<{ rows: GraftBenchRow[]; model: unknown; engine: unknown }> {
  const rows: GraftBenchRow[] = [];
  let fingerprints: { model: unknown; engine: unknown } = { model: null, engine: null };
  const dataDir = o.dataDir ?? (await mkdtemp(join(tmpdir(), "kvgraft-bench-")));
  const ramDir = await mkdtemp(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "kvgraft-bench-ram-"));
  try {
    for (const kv of o.kvTypes) {
      const engine = await Engine.open({
        ...o.engine,
        modelPath: o.modelPath,
        slots: 2,
        contextSize: Math.max(...o.lengths) + 8,
        kvType: kv,
      });
      fingerprints = { model: engine.modelFingerprint, engine: engine.engineFingerprint };
      const api = nativeStateApi(engine.llama);
      const memory = api ? MemoryTier.open(api, o.memoryBytes ?? 16 * 2 ** 30) : null;
      const { store } = await BlockStore.open(join(dataDir, kv));
      let peakVram = 0;
      const sampleVram = async () => {
        if (engine.llama.gpu === false) return;
        const v = await engine.llama.getVramState();
        peakVram = Math.max(peakVram, v.used);
      };
      try {
        const [a, b] = [engine.slot(0), engine.slot(1)];
        const rng = new Xoshiro128(`bench-${kv}`);
        // Warm-up: the first evaluation of a process pays kernel loading.
        await a.evaluateWithoutGeneratingNewTokens(
          randomTokens(rng, Math.min(256, Math.min(...o.lengths)), engine.vocabSize),
        );
        await a.clearHistory();
        for (const length of o.lengths) {
          const tokens = randomTokens(rng, length, engine.vocabSize);
          const [probe] = randomTokens(rng, 1, engine.vocabSize) as [Token];
          const times = {
            recompute: [] as number[],
            hot: [] as number[],
            hotLibrary: [] as number[],
            warm: [] as number[],
            warmLoad: [] as number[],
            warmFileLoad: [] as number[],
            hotErase: [] as number[],
            hotDecode: [] as number[],
            cold: [] as number[],
            hash: [] as number[],
            check: [] as number[],
            warmFile: [] as number[],
            coldFile: [] as number[],
            copy: [] as number[],
            copyCall: [] as number[],
            copyTargetToken: [] as number[],
            hotLlama: [] as number[],
            hotDecodeCall: [] as number[],
            hotSampleCall: [] as number[],
          };
          const llamaContext = (a as unknown as { _context: { _ctx: unknown } })._context._ctx;
          const calls = nativeCallTimer(llamaContext);
          const gate = new ProbeGate(engine.vocabSize, (id) => store.quarantineBlock(id));
          const hashes = new Set<string>();
          let probeEntries = engine.vocabSize;
          /** node-llama-cpp's decode step of the probe (its evaluation: decode call, then sample call). */
          const libraryToken = (seq: LlamaContextSequence) =>
            seq.controlledEvaluate([[probe, { generateNext: { token: true } }]]);
          /** The timed token: one decode step of the probe, as a graft serves a token (generation.ts). */
          const oneToken = (seq: LlamaContextSequence) =>
            api ? greedyStep(api, seq, [probe]) : libraryToken(seq);
          /** Untimed: erases that token and hashes the full distribution at the same position. */
          const prove = async (seq: LlamaContextSequence) => {
            await seq.eraseContextTokenRanges([{ start: length, end: seq.nextTokenIndex }]);
            const result = await evaluateProbe(seq, probe, engine.vocabSize);
            hashes.add(result.sha256);
            probeEntries = Math.min(probeEntries, result.entries);
            return result;
          };
          let stateBytes = 0;
          let dropped = false;
          let block: BlockManifest | null = null;
          let sha = "";
          for (let run = 0; run <= o.runs; run++) {
            const timed = run > 0; // run 0 warms this length up
            await a.clearHistory();
            let t = performance.now();
            await a.evaluateWithoutGeneratingNewTokens(tokens);
            await oneToken(a);
            if (timed) times.recompute.push(performance.now() - t);
            const fresh = await prove(a);
            await sampleVram();
            await a.eraseContextTokenRanges([{ start: length, end: a.nextTokenIndex }]);
            if (run === 0) {
              const temp = store.tempPath("bench");
              await a.saveStateToFile(temp);
              const manifest = await store.commit(
                temp,
                manifestFields({
                  tokenCount: length,
                  tokensSha256: "0".repeat(64),
                  textSha256: "0".repeat(64),
                  model: engine.modelFingerprint,
                  engine: engine.engineFingerprint,
                  probe: { token: probe, sha256: fresh.sha256 },
                }),
              );
              block = manifest;
              sha = manifest.sha256;
              stateBytes = manifest.sizeBytes;
              await copyFile(store.statePath(sha), join(ramDir, `${sha}.state`));
            }
            // Hot: the block is resident in slot A; erase the tail and evaluate the token again.
            api?.takeEvalTimings(llamaContext);
            t = performance.now();
            await a.eraseContextTokenRanges([{ start: length, end: a.nextTokenIndex }]);
            await oneToken(a);
            if (timed) times.hot.push(performance.now() - t);
            const hotEval = api?.takeEvalTimings(llamaContext);
            if (timed && hotEval && hotEval.tokenEvalMs > 0) times.hotLlama.push(hotEval.tokenEvalMs);
            // The same through node-llama-cpp's evaluation, its native calls timed.
            t = performance.now();
            const { times: hotCalls } = await calls.measure(async () => {
              await a.eraseContextTokenRanges([{ start: length, end: a.nextTokenIndex }]);
              await libraryToken(a);
            });
            if (timed) {
              times.hotLibrary.push(performance.now() - t);
              times.hotDecodeCall.push(hotCalls.decodeBatchMs);
              times.hotSampleCall.push(hotCalls.sampleTokenMs);
            }
            // The hot step's parts: the erase alone, then the token evaluated without logits.
            t = performance.now();
            await a.eraseContextTokenRanges([{ start: length, end: a.nextTokenIndex }]);
            if (timed) times.hotErase.push(performance.now() - t);
            t = performance.now();
            await a.evaluateWithoutGeneratingNewTokens([probe]);
            if (timed) times.hotDecode.push(performance.now() - t);
            await prove(a);
            // node-llama-cpp's file path, warm: load the tmpfs copy into slot B.
            t = performance.now();
            await loadSequenceState(b, join(ramDir, `${sha}.state`));
            const fileLoaded = performance.now();
            await oneToken(b);
            if (timed) {
              times.warmFile.push(performance.now() - t);
              times.warmFileLoad.push(fileLoaded - t);
            }
            await prove(b);
            // The probe check on the restored block, timed as a graft with verifyProbe pays it.
            await b.eraseContextTokenRanges([{ start: length, end: b.nextTokenIndex }]);
            t = performance.now();
            await gate.check(b, block as BlockManifest);
            if (timed) times.check.push(performance.now() - t);
            // node-llama-cpp's file path, cold: hash-check the disk file, then load it, with the
            // page cache dropped first.
            dropped = await dropPageCache();
            t = performance.now();
            const path = await store.checkedStatePath(sha);
            const hashed = performance.now();
            await loadSequenceState(b, path);
            await oneToken(b);
            if (timed) {
              times.coldFile.push(performance.now() - t);
              times.hash.push(hashed - t);
            }
            await prove(b);
            if (memory && api) {
              // Cold: one checked read of the file into pinned memory, then the load from it.
              memory.remove(sha);
              await dropPageCache();
              t = performance.now();
              const read = await memory.readChecked(sha, path, chunkedHash(store, sha));
              if (read === null || read === "mismatch") throw new Error(`memory tier read: ${read}`);
              await loadSequenceFromMemory(api, b, read.range);
              read.release();
              await oneToken(b);
              if (timed) times.cold.push(performance.now() - t);
              await prove(b);
              // Warm: the bytes are in pinned memory now.
              t = performance.now();
              const held = memory.acquire(sha);
              if (!held) throw new Error("the memory tier lost the block");
              await loadSequenceFromMemory(api, b, held.range);
              const loaded = performance.now();
              held.release();
              await oneToken(b);
              if (timed) {
                times.warm.push(performance.now() - t);
                times.warmLoad.push(loaded - t);
              }
              await prove(b);
              // Copy: the hot block in slot A duplicated into slot B on the device.
              await a.eraseContextTokenRanges([{ start: length, end: a.nextTokenIndex }]);
              t = performance.now();
              await copySequence(api, a, b);
              const copied = performance.now();
              await oneToken(b);
              if (timed) {
                times.copy.push(performance.now() - t);
                times.copyCall.push(copied - t);
              }
              await prove(b);
              await b.eraseContextTokenRanges([{ start: length, end: b.nextTokenIndex }]);
              t = performance.now();
              await oneToken(b);
              if (timed) times.copyTargetToken.push(performance.now() - t);
            } else {
              times.warmLoad = times.warmFileLoad;
              times.warm = times.warmFile;
              times.cold = times.coldFile;
            }
            await sampleVram();
            await b.clearHistory();
          }
          const row: GraftBenchRow = {
            length,
            kv,
            recomputeMs: median(times.recompute),
            hotMs: median(times.hot),
            hotLibraryMs: median(times.hotLibrary),
            warmMs: median(times.warm),
            warmLoadMs: median(times.warmLoad),
            loadGBps: stateBytes / 1e9 / (median(times.warmLoad) / 1000),
            hotEraseMs: median(times.hotErase),
            hotDecodeMs: median(times.hotDecode),
            coldMs: median(times.cold),
            coldHashMs: median(times.hash),
            probeCheckMs: median(times.check),
            coldCacheDropped: dropped,
            stateBytes,
            restoreGBps: stateBytes / 1e9 / (median(times.warm) / 1000),
            hotSpeedup: median(times.recompute) / median(times.hot),
            warmSpeedup: median(times.recompute) / median(times.warm),
            coldSpeedup: median(times.recompute) / median(times.cold),
            statePath: memory ? "memory" : "file",
            pinned: memory?.pinned ?? false,
            warmFileMs: median(times.warmFile),
            coldFileMs: median(times.coldFile),
            copyMs: times.copy.length ? median(times.copy) : null,
            copyCallMs: times.copyCall.length ? median(times.copyCall) : null,
            copyTargetTokenMs: times.copyTargetToken.length ? median(times.copyTargetToken) : null,
            hotLlamaEvalMs: times.hotLlama.length ? median(times.hotLlama) : null,
            hotDecodeCallMs: median(times.hotDecodeCall),
            hotSampleCallMs: median(times.hotSampleCall),
            diskReadGBps: null,
            coldOverDiskBound: null,
            hashesEqual: hashes.size === 1,
            probeSha256: hashes.size === 1 ? ([...hashes][0] as string) : null,
            probeEntries,
            peakVramBytes: engine.llama.gpu === false ? null : peakVram,
          };
          if (o.energySeconds) {
            const ramPath = join(ramDir, `${sha}.state`);
            const idle = await idleWatts(2);
            const recompute = await measureEnergy(o.energySeconds, async () => {
              await a.clearHistory();
              await a.evaluateWithoutGeneratingNewTokens(tokens);
              await oneToken(a);
            });
            const hot = await measureEnergy(o.energySeconds, async () => {
              await a.eraseContextTokenRanges([{ start: length, end: a.nextTokenIndex }]);
              await oneToken(a);
            });
            const warm = await measureEnergy(o.energySeconds, async () => {
              await loadSequenceState(b, ramPath);
              await oneToken(b);
            });
            if (idle !== null && recompute && hot && warm)
              row.energy = { idleWatts: idle, recompute, hot, warm };
            await b.clearHistory();
          }
          const disk = diskReadGBps(store.statePath(sha));
          if (disk !== null) {
            row.diskReadGBps = disk;
            row.coldOverDiskBound = row.coldMs / ((stateBytes / 1e9 / disk) * 1000);
          }
          rows.push(row);
          o.log(
            `${kv} ${length} tokens: recompute ${row.recomputeMs.toFixed(1)} ms, hot ${row.hotMs.toFixed(2)} ms (${row.hotSpeedup.toFixed(1)}x), ` +
              `warm ${row.warmMs.toFixed(1)} ms (${row.warmSpeedup.toFixed(2)}x; load ${row.warmLoadMs.toFixed(1)} ms, ${row.loadGBps.toFixed(1)} GB/s), cold ${row.coldMs.toFixed(1)} ms (${row.coldSpeedup.toFixed(2)}x), ` +
              `hot step: erase ${row.hotEraseMs.toFixed(2)} ms, llama.cpp eval ${fixedOrDash(row.hotLlamaEvalMs, 2)} ms; node-llama-cpp's path ${row.hotLibraryMs.toFixed(2)} ms: decode call ${row.hotDecodeCallMs.toFixed(2)} ms, sample call ${row.hotSampleCallMs.toFixed(2)} ms; ` +
              `copy ${fixedOrDash(row.copyMs, 2)} ms (call ${fixedOrDash(row.copyCallMs, 2)} ms, token alone ${fixedOrDash(row.copyTargetTokenMs, 2)} ms), ` +
              `probe check ${row.probeCheckMs.toFixed(2)} ms, hashes of ${row.probeEntries} entries ${row.hashesEqual ? "equal" : "DIFFERENT"}`,
          );
          memory?.remove(sha);
          await store.delete(sha);
          await rm(join(ramDir, `${sha}.state`), { force: true });
        }
      } finally {
        await engine.dispose();
      }
    }
  } finally {
    await rm(ramDir, { recursive: true, force: true });
    if (!o.dataDir) await rm(dataDir, { recursive: true, force: true });
  }
  return { rows, ...fingerprints };
}

const fixedOrDash = (n: number | null, digits: number) => (n === null ? "-" : n.toFixed(digits));

/** The rows as a Markdown table. */
export function graftBenchTable(rows: GraftBenchRow[]): string {
  const head =
    "| length | KV | path | recompute ms | hot ms | warm ms | cold ms | copy ms | warm file ms | cold file ms (hash ms) | hot x | warm x | cold x | cold / disk bound | state MB | restore GB/s | load GB/s | hot decode ms | probe check ms | probe entries | hashes equal |\n" +
    "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|";
  const lines = rows.map(
    (r) =>
      `| ${r.length} | ${r.kv} | ${r.statePath}${r.pinned ? " (pinned)" : ""} | ${r.recomputeMs.toFixed(1)} | ${r.hotMs.toFixed(2)} | ${r.warmMs.toFixed(1)} | ${r.coldMs.toFixed(1)} | ${fixedOrDash(r.copyMs, 2)} | ` +
      `${r.warmFileMs.toFixed(1)} | ${r.coldFileMs.toFixed(1)} (${r.coldHashMs.toFixed(1)}) | ${r.hotSpeedup.toFixed(1)} | ${r.warmSpeedup.toFixed(2)} | ${r.coldSpeedup.toFixed(2)} | ` +
      `${fixedOrDash(r.coldOverDiskBound, 2)} | ${(r.stateBytes / 1e6).toFixed(1)} | ${r.restoreGBps.toFixed(2)} | ${r.loadGBps.toFixed(1)} | ${r.hotDecodeMs.toFixed(2)} | ${r.probeCheckMs.toFixed(2)} | ${r.probeEntries} | ${r.hashesEqual ? "yes" : "NO"} |`,
  );
  return [head, ...lines].join("\n");
}
