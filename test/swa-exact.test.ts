/**
 * Sliding-window (gemma3) restores are bit-identical to a fresh prefill at every length, in slots
 * that never held anything and in reused ones, with the SWA full cache off and on.
 *
 * This needs the engine's llama.cpp patch (gpu-node/engine/native/llama-patches/swa-exact-restore.diff):
 * without it a restored sequence lands in other KV cells than the saved one and attention runs over
 * a different padded cell range, so flash attention splits and reduces it differently (on the CPU
 * at 256-318 tokens with window 64; on the GPU at most lengths). The unpatched npm prebuilt fails
 * here, so the suite runs only on the patched engine build (`KV_LLAMA=lastBuild`), or on any build
 * with `KVGRAFT_SWA_EXACT=1` (to see the prebuilt fail).
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, type LlamaBinary } from "../gpu-node/engine/engine.js";
import { evaluateProbe } from "../gpu-node/engine/probe.js";
import { loadSequenceState } from "../gpu-node/engine/state.js";
import { randomTokens, verifyGraft } from "../gpu-node/verify.js";
import { Xoshiro128 } from "../shared/random.js";
import { syntheticModel } from "./helpers/models.js";
import { skipEachWith } from "./helpers/skip.js";

const binary: LlamaBinary = process.env.KV_LLAMA === "lastBuild" ? "lastBuild" : "cpu";
const NOT_ENABLED =
  binary === "lastBuild" || process.env.KVGRAFT_SWA_EXACT === "1"
    ? null
    : "needs the patched engine build: `bash scripts/build-engine.sh cpu`, then KV_LLAMA=lastBuild runs these (KVGRAFT_SWA_EXACT=1 runs them on any build, to see the npm prebuilt fail)";

skipEachWith(NOT_ENABLED, "swa-exact.test");

/** Below the window, inside one flash-attention chunk, across the chunk edge (256-318), at and far past the window. */
const LENGTHS = [64, 256, 300, 318, 1024, 4096] as const;
const CONTEXT = 4096 + 1;

async function greedy(seq: LlamaContextSequence, first: Token, n: number): Promise<Token[]> {
  const out: Token[] = [];
  for await (const t of seq.evaluate([first], { temperature: 0 })) {
    out.push(t);
    if (out.length >= n) break;
  }
  return out;
}

function open(swaFullCache: boolean): Promise<Engine> {
  return Engine.open({
    modelPath: syntheticModel("tiny-gemma3"),
    slots: 2,
    contextSize: CONTEXT,
    swaFullCache,
    binary,
  });
}

describe("sliding-window restores on the patched engine build", () => {
  describe.each([false, true])("SWA full cache %s", (swaFullCache) => {
    let engine: Engine;
    beforeAll(async () => {
      if (NOT_ENABLED) return;
      engine = await open(swaFullCache);
    });
    afterAll(() => engine?.dispose());

    it.each(LENGTHS)("%i tokens: equal probability hashes in reused slots", async (tokens) => {
      const report = await verifyGraft(engine, { trials: 4, tokens, seed: `swa-${tokens}-${swaFullCache}` });
      expect(report.shaEqual).toBe(4);
      expect(report.klP99).toBe(0);
    });

    it("continues greedily after a graft exactly as after a fresh prefill, through the ring's wrap", async () => {
      const dir = mkdtempSync(join(tmpdir(), "kvgraft-swa-greedy-"));
      // 700 tokens and 100 more: the sliding-window ring (768 cells here) wraps during the continuation.
      const tokens = randomTokens(new Xoshiro128(`swa-greedy-${swaFullCache}`), 700, engine.vocabSize);
      const [a, b] = [engine.slot(0), engine.slot(1)];
      await a.clearHistory();
      await a.evaluateWithoutGeneratingNewTokens(tokens.slice(0, -1));
      await a.saveStateToFile(join(dir, "s"));
      const fresh = await greedy(a, tokens.at(-1) as Token, 100);
      await loadSequenceState(b, join(dir, "s"));
      const grafted = await greedy(b, tokens.at(-1) as Token, 100);
      expect(fresh).toHaveLength(100);
      expect(grafted).toEqual(fresh);
    });
  });

  it.each(LENGTHS)(
    "%i tokens: equal probability hashes in slots that never held anything",
    async (tokens) => {
      const rng = new Xoshiro128(`swa-fresh-slots-${tokens}`);
      const dir = mkdtempSync(join(tmpdir(), "kvgraft-swa-fresh-"));
      for (let trial = 0; trial < 2; trial++) {
        // A new context per trial: both slots start empty, as in the first trial of a process.
        const engine = await open(false);
        try {
          const prefix = randomTokens(rng, tokens, engine.vocabSize);
          const [probe] = randomTokens(rng, 1, engine.vocabSize) as [Token];
          const file = join(dir, `t${trial}.state`);
          await engine.slot(0).evaluateWithoutGeneratingNewTokens(prefix);
          await engine.slot(0).saveStateToFile(file);
          const fresh = await evaluateProbe(engine.slot(0), probe, engine.vocabSize);
          await loadSequenceState(engine.slot(1), file);
          const graft = await evaluateProbe(engine.slot(1), probe, engine.vocabSize);
          expect(graft.sha256).toBe(fresh.sha256);
        } finally {
          await engine.dispose();
        }
      }
    },
  );
});

describe("cell geometry in saved states", () => {
  let engine: Engine;
  let dir: string;
  let state: Buffer;
  beforeAll(async () => {
    if (NOT_ENABLED) return;
    engine = await open(false);
    dir = mkdtempSync(join(tmpdir(), "kvgraft-swa-geometry-"));
    await engine
      .slot(0)
      .evaluateWithoutGeneratingNewTokens(
        randomTokens(new Xoshiro128("swa-geometry"), 300, engine.vocabSize),
      );
    await engine.slot(0).saveStateToFile(join(dir, "s"));
    state = readFileSync(join(dir, "s"));
  });
  afterAll(() => engine?.dispose());

  /** Offset of the first cache's stream count, tagged "KG" in its upper half (2 slots: 02 00 47 4b). */
  function geometryOffset(): number {
    const at = state.indexOf(Buffer.from([2, 0, 0x47, 0x4b]));
    expect(at, "the patched build tags the stream count of a per-sequence state").toBeGreaterThan(0);
    return at;
  }

  it("is refused when corrupt, and the slot is left empty", async () => {
    // After the tag: stream 0's cell count, size, head, range count, then the first range [from, to).
    const bad = Buffer.from(state);
    bad.writeUInt32LE(0xffffffff, geometryOffset() + 4 * 6);
    writeFileSync(join(dir, "bad"), bad);
    await expect(loadSequenceState(engine.slot(1), join(dir, "bad"))).rejects.toThrow();
    expect(engine.slot(1).nextTokenIndex).toBe(0);
    await loadSequenceState(engine.slot(1), join(dir, "s"));
    expect(engine.slot(1).nextTokenIndex).toBe(300);
  });

  it("loads into a context of another size, in other cells", async () => {
    const other = await Engine.open({
      modelPath: syntheticModel("tiny-gemma3"),
      slots: 2,
      contextSize: 1024,
      swaFullCache: false,
      binary,
    });
    try {
      expect(geometryOffset()).toBeGreaterThan(0);
      await loadSequenceState(other.slot(1), join(dir, "s"));
      expect(other.slot(1).nextTokenIndex).toBe(300);
      const probe = await evaluateProbe(other.slot(1), 300 as Token, other.vocabSize);
      expect(probe.probabilities.length).toBe(other.vocabSize);
    } finally {
      await other.dispose();
    }
  });
});
