/**
 * Batched decoding (gpu-node/engine/batched-decode.ts): slots decoding at once share one
 * llama_decode a step. llama.cpp's logits for a token depend on what shares its batch
 * (exact-batching.ts), so batched tokens are compared with each sequence decoded alone and must be
 * the same, or differ first where the two tokens were a near tie for the sequence alone (their
 * probabilities within 0.1% of each other): a wrong position, cell or sampler would differ at once
 * and by far. Real llama.cpp (the npm CPU build) on generated models; nothing timed but the
 * steps' phase totals (decode-stats.ts), which must be there and fit in the wall time around them.
 * CI runs it again on our engine build, where a lone greedy step is one native call
 * (greedy-step.ts), a greedy sampler reads its logit row without a candidate array, and with
 * `greedyPick` a step's greedy members take their tokens in one native call (step-sample.ts)
 * beside sampled ones: a wrong row would give other tokens at once.
 */
import { acquireLock } from "lifecycle-utils";
import type { Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Decoded, decode } from "../gpu-node/blocks/slots/generation.js";
import type { GenerationOptions } from "../gpu-node/blocks/types.js";
import { bySequenceId } from "../gpu-node/engine/batched-decode.js";
import { batchedStepPhases, DECODE_PHASES, decodeCountsSince } from "../gpu-node/engine/decode-stats.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { evaluateProbe } from "../gpu-node/engine/probe.js";
import type { SequenceInternals } from "../gpu-node/engine/state-memory.js";
import { randomTokens } from "../gpu-node/verify.js";
import { Xoshiro128 } from "../shared/random.js";
import { syntheticModel } from "./helpers/models.js";

const SLOTS = 4;
const MAX = 24;

describe.each([
  ["tiny-llama", false],
  ["tiny-gemma3", false],
  ["tiny-llama", true],
] as const)("batched decoding on %s (greedyPick %s)", (preset, greedyPick) => {
  let engine: Engine;
  let inputs: Token[][];
  /** Each input's greedy tokens decoded alone by node-llama-cpp's own evaluation (not the batch loop). */
  let alone: Token[][];

  beforeAll(async () => {
    engine = await Engine.open({
      modelPath: syntheticModel(preset),
      slots: SLOTS,
      contextSize: 256,
      greedyPick,
    });
    expect(engine.options.greedyPick).toBe(greedyPick);
    inputs = Array.from({ length: SLOTS }, (_, i) =>
      randomTokens(new Xoshiro128(`batched-${preset}-${i}`), 12 + 9 * i, engine.vocabSize),
    );
    alone = [];
    for (let i = 0; i < SLOTS; i++) {
      const seq = engine.slot(i);
      const tokens: Token[] = [];
      for await (const t of seq.evaluate(inputs[i] as Token[], { temperature: 0 })) {
        tokens.push(t);
        if (tokens.length >= MAX) break;
      }
      alone.push(tokens);
      await seq.clearHistory();
    }
  });
  afterAll(() => engine?.dispose());

  /** Decodes input `i` in slot `i` from an empty slot, and empties it again. */
  async function run(i: number, options: GenerationOptions): Promise<Decoded> {
    const seq = engine.slot(i);
    await seq.clearHistory();
    const decoded = await decode(engine, seq, inputs[i] as Token[], options);
    // The sequence holds the input and every yielded token but the last (node-llama-cpp's rule).
    expect(seq.nextTokenIndex).toBe((inputs[i] as Token[]).length + Math.max(0, decoded.tokens.length - 1));
    await seq.clearHistory();
    return decoded;
  }

  /**
   * Tokens of sequence `i` agree with its tokens alone, or first differ where the two candidates
   * were a near tie alone. Returns whether they were identical.
   */
  async function agreesWithAlone(i: number, got: Token[], length = got.length): Promise<boolean> {
    const expected = (alone[i] as Token[]).slice(0, length);
    const d = expected.findIndex((t, k) => t !== got[k]);
    if (d < 0) {
      expect(got).toEqual(expected);
      return true;
    }
    // Replay the context the alone decode had before the differing token, one token a step.
    const seq = engine.slot(i);
    await seq.clearHistory();
    const context = [...(inputs[i] as Token[]), ...expected.slice(0, d)];
    await seq.evaluateWithoutGeneratingNewTokens(context.slice(0, (inputs[i] as Token[]).length));
    for (const t of context.slice((inputs[i] as Token[]).length, -1))
      await seq.evaluateWithoutGeneratingNewTokens([t]);
    const p = (await evaluateProbe(seq, context.at(-1) as Token, engine.vocabSize)).probabilities;
    await seq.clearHistory();
    const [a, b] = [p[expected[d] as number] as number, p[got[d] as number] as number];
    expect(Math.abs(a - b) / Math.max(a, b), `slot ${i} differs at token ${d}: not a near tie`).toBeLessThan(
      1e-3,
    );
    return false;
  }

  it("decodes a sequence alone in the loop as node-llama-cpp does", async () => {
    const before = engine.decodeStats.snapshot();
    for (let i = 0; i < SLOTS; i++) expect((await run(i, { maxTokens: MAX })).tokens).toEqual(alone[i]);
    const after = engine.decodeStats.snapshot();
    // One sequence a decode, in the loop (a lone greedy step natively on our engine build).
    const steps = (c: typeof after) => c.batched.steps + c.native.steps;
    const sequences = (c: typeof after) => c.batched.sequences + c.native.sequences;
    expect(steps(after)).toBeGreaterThan(steps(before));
    expect(sequences(after) - sequences(before)).toBe(steps(after) - steps(before));
  });

  it("gives each sequence its tokens decoded alone, with a decode joining mid-batch", async () => {
    const before = engine.decodeStats.snapshot();
    const t0 = performance.now();
    let late: Promise<Decoded> | undefined;
    let seen = 0;
    const early = [0, 1, 2].map((i) =>
      run(i, {
        maxTokens: MAX,
        // Slot 3 starts once slot 0 has 5 tokens: it joins the others' batch at its next step.
        ...(i === 0
          ? {
              onToken: () => {
                if (++seen === 5) late = run(3, { maxTokens: MAX });
              },
            }
          : {}),
      }),
    );
    const results = await Promise.all(early);
    results.push(await (late as unknown as Promise<Decoded>));
    const wallMs = performance.now() - t0;
    const after = engine.decodeStats.snapshot();
    // Every batched step's wall time, by phase: the decode and the sampling took time, and the
    // steps (one at a time) fit in the wall time around them.
    const { phaseMs, steps } = decodeCountsSince(before, after).batched;
    expect(steps).toBeGreaterThan(0);
    expect(phaseMs.decode).toBeGreaterThan(0);
    expect(phaseMs.sample).toBeGreaterThan(0);
    for (const phase of DECODE_PHASES) expect(phaseMs[phase]).toBeGreaterThanOrEqual(0);
    expect(phaseMs.decode + phaseMs.sample).toBeLessThanOrEqual(wallMs);
    expect(DECODE_PHASES.reduce((sum, phase) => sum + phaseMs[phase], 0)).toBeLessThanOrEqual(wallMs);
    const perStep = batchedStepPhases(decodeCountsSince(before, after));
    expect(perStep.decodeMsPerStep).toBeCloseTo(phaseMs.decode / steps, 2);
    const sizes = Object.keys(after.batched.bySequences).filter(
      (k) => (after.batched.bySequences[k] ?? 0) > (before.batched.bySequences[k] ?? 0),
    );
    expect(sizes).toContain("3");
    expect(sizes).toContain("4");
    let identical = 0;
    for (let i = 0; i < SLOTS; i++) {
      expect(results[i]?.path).toBe("batched");
      expect(results[i]?.tokens).toHaveLength(MAX);
      if (await agreesWithAlone(i, results[i]?.tokens as Token[])) identical++;
    }
    expect(identical).toBeGreaterThanOrEqual(SLOTS - 1);
  });

  it("lets a decode that finishes early leave and one that is cancelled stop, the others undisturbed", async () => {
    const before = engine.decodeStats.snapshot();
    const cancel = new AbortController();
    let cancelledSeen = 0;
    const results = await Promise.all([
      run(0, { maxTokens: MAX }),
      run(1, { maxTokens: 4 }),
      run(2, {
        maxTokens: MAX,
        signal: cancel.signal,
        onToken: () => void (++cancelledSeen === 6 && cancel.abort()),
      }),
      run(3, { maxTokens: MAX }),
    ]);
    expect(results.map((r) => r.finishReason)).toEqual(["maxTokens", "maxTokens", "aborted", "maxTokens"]);
    expect(results[1]?.tokens).toHaveLength(4);
    expect(results[2]?.tokens).toHaveLength(6);
    const after = engine.decodeStats.snapshot();
    const grew = (k: string) => (after.batched.bySequences[k] ?? 0) > (before.batched.bySequences[k] ?? 0);
    expect([grew("4"), grew("3"), grew("2")]).toEqual([true, true, true]);
    let identical = 0;
    for (let i = 0; i < SLOTS; i++) if (await agreesWithAlone(i, results[i]?.tokens as Token[])) identical++;
    expect(identical).toBeGreaterThanOrEqual(SLOTS - 1);
    // The cancelled slot decodes again as it did alone.
    expect(await agreesWithAlone(2, (await run(2, { maxTokens: 8 })).tokens)).toBe(true);
  });

  it("samples each sequence with its own settings in the shared steps", async () => {
    // A sampled draw can land on the other side of a boundary that the shared batch moved by a
    // rounding error, and then the two decodes part (tiny-gemma3 at temperature 0.9 does, beside
    // another slot's prefill), so sampled tokens are not compared with alone. Each sequence's
    // sampler is its own: seeded, the same tokens every time; other seeds, other tokens; and a
    // sampled neighbour leaves greedy sequences as they are alone.
    const sampled = (seed: number) => ({ maxTokens: 16, sampling: { temperature: 0.9, seed } });
    const once = () =>
      Promise.all([0, 1, 2, 3].map((i) => run(i, i < 2 ? { maxTokens: MAX } : sampled(100 + i))));
    const [first, second] = [await once(), await once()];
    expect(second.map((r) => r.tokens)).toEqual(first.map((r) => r.tokens));
    expect(first[2]?.tokens).toHaveLength(16);
    expect(first[2]?.tokens).not.toEqual(first[3]?.tokens);
    await agreesWithAlone(0, first[0]?.tokens as Token[]);
    await agreesWithAlone(1, first[1]?.tokens as Token[]);
    const reseeded = await Promise.all([2, 3].map((i) => run(i, sampled(200 + i))));
    expect(reseeded[0]?.tokens).not.toEqual(first[2]?.tokens);
  });

  it("leaves a decode that needs a context shift to node-llama-cpp's evaluation", async () => {
    const seq = engine.slot(0);
    await seq.clearHistory();
    const long = randomTokens(new Xoshiro128(`batched-long-${preset}`), 240, engine.vocabSize);
    const decoded = await decode(engine, seq, long, { maxTokens: 30 });
    expect(decoded.path).toBe("library");
    await seq.clearHistory();
  });
});

describe("a step's batch order", () => {
  it("puts the members in ascending sequence ids, whatever order they asked in", () => {
    // llama.cpp cuts a batch into one forward pass per run of consecutive sequence ids in batch
    // order (a KV stream per sequence): 5, 2, 3, 0, 1 would be four passes, 0-3 and 5 two.
    const asked = [5, 2, 3, 0, 1].map((id) => ({ seq: { _sequenceId: id }, name: `slot ${id}` }));
    const ordered = bySequenceId(asked);
    expect(ordered.map((m) => m.seq._sequenceId)).toEqual([0, 1, 2, 3, 5]);
    expect(ordered.map((m) => m.name)).toEqual(["slot 0", "slot 1", "slot 2", "slot 3", "slot 5"]);
    expect(asked.map((m) => m.seq._sequenceId)).toEqual([5, 2, 3, 0, 1]);
  });
});

describe.each(["tiny-llama", "tiny-gemma3"] as const)("one pass a step (stepFill) on %s", (preset) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open({
      modelPath: syntheticModel(preset),
      slots: 4,
      contextSize: 256,
      stepFill: true,
    });
  });
  afterAll(() => engine?.dispose());

  /** Greedy tokens of `input` decoded alone by node-llama-cpp's own evaluation in slot `i`. */
  async function alone(i: number, input: Token[], n: number): Promise<Token[]> {
    const seq = engine.slot(i);
    await seq.clearHistory();
    const out: Token[] = [];
    for await (const t of seq.evaluate(input, { temperature: 0 })) {
      out.push(t);
      if (out.length >= n) break;
    }
    await seq.clearHistory();
    return out;
  }

  it("fills the idle slots between busy ones, leaves what they hold exact, and decodes as alone", async () => {
    expect(engine.options.stepFill).toBe(true);
    const rng = new Xoshiro128(`fill-${preset}`);
    const [a, b] = [randomTokens(rng, 14, engine.vocabSize), randomTokens(rng, 23, engine.vocabSize)];
    const resident = randomTokens(rng, 40, engine.vocabSize);
    const [aloneA, aloneB] = [await alone(0, a, MAX), await alone(3, b, MAX)];
    // Slot 1 holds a resident prefix, slot 2 nothing: both lie between the busy slots 0 and 3.
    const holder = engine.slot(1);
    for (const i of [1, 2]) await engine.slot(i).clearHistory();
    await holder.evaluateWithoutGeneratingNewTokens(resident.slice(0, -1));
    const before = engine.decodeStats.snapshot();
    const [ra, rb] = await Promise.all(
      [0, 3].map(async (i) => {
        await engine.slot(i).clearHistory();
        return decode(engine, engine.slot(i), i === 0 ? a : b, { maxTokens: MAX });
      }),
    );
    const since = decodeCountsSince(before, engine.decodeStats.snapshot()).batched;
    // Each two-member step gave both idle slots a filler.
    expect(since.bySequences["2"]).toBeGreaterThan(0);
    expect(since.fillers).toBe(2 * (since.bySequences["2"] ?? 0));
    // Neither idle slot kept a filler's cell; the holder's prefix continues as it does freshly.
    expect(holder.nextTokenIndex).toBe(resident.length - 1);
    const ctx = (holder as unknown as SequenceInternals)._context._ctx as unknown as {
      getSequenceKvCacheMaxPosition(id: number): number;
    };
    expect(ctx.getSequenceKvCacheMaxPosition(1)).toBe(resident.length - 2);
    expect(ctx.getSequenceKvCacheMaxPosition(2)).toBe(-1);
    const afterFill = await evaluateProbe(holder, resident.at(-1) as Token, engine.vocabSize);
    await holder.clearHistory();
    await holder.evaluateWithoutGeneratingNewTokens(resident.slice(0, -1));
    const fresh = await evaluateProbe(holder, resident.at(-1) as Token, engine.vocabSize);
    expect(afterFill.sha256).toBe(fresh.sha256);
    await holder.clearHistory();
    // The members' greedy tokens agree with alone (batched logits differ only in rounding).
    const agree = (got: Token[], want: Token[]) => got.filter((t, k) => t === want[k]).length;
    expect(agree(ra?.tokens ?? [], aloneA) + agree(rb?.tokens ?? [], aloneB)).toBeGreaterThanOrEqual(MAX);
    expect(ra?.path).toBe("batched");
  });

  it("pads queries joining in consecutive slots so that their remainder is one pass, and keeps no pad cell", async () => {
    const rng = new Xoshiro128(`pad-${preset}`);
    const [a, b, c] = [14, 23, 9].map((n) => randomTokens(rng, n, engine.vocabSize)) as [
      Token[],
      Token[],
      Token[],
    ];
    const [aloneB, aloneC] = [await alone(1, b, MAX), await alone(2, c, MAX)];
    for (let i = 0; i < 4; i++) await engine.slot(i).clearHistory();
    const before = engine.decodeStats.snapshot();
    // Slot 0 decodes; right after its first token, queries of 23 and 9 tokens join in slots 1 and 2
    // at once: the next step holds both (and 0's token), the 9-token query padded to 23.
    let joined: Promise<Decoded[]> | undefined;
    await decode(engine, engine.slot(0), a, {
      maxTokens: 4,
      onToken: () => {
        joined ??= Promise.all([
          decode(engine, engine.slot(1), b, { maxTokens: MAX }),
          decode(engine, engine.slot(2), c, { maxTokens: MAX }),
        ]);
      },
    });
    const [rb, rc] = (await joined) as Decoded[];
    const since = decodeCountsSince(before, engine.decodeStats.snapshot()).batched;
    expect(since.fillers).toBe(23 - 9);
    // Every batched step is one pass but the joining one, two: one token of each slot, then both
    // remainders of 22 tokens together (unpadded, the 22 and 8 would be two passes).
    expect(since.passes).toBe(since.steps + 1);
    // No pad cell is left: each slot ends at its last evaluated token.
    const ctx = (engine.slot(2) as unknown as SequenceInternals)._context._ctx as unknown as {
      getSequenceKvCacheMaxPosition(id: number): number;
    };
    for (const [i, input, got] of [
      [1, b, rb],
      [2, c, rc],
    ] as const) {
      expect(engine.slot(i).nextTokenIndex).toBe(input.length + (got?.tokens.length ?? 0) - 1);
      expect(ctx.getSequenceKvCacheMaxPosition(i)).toBe(engine.slot(i).nextTokenIndex - 1);
    }
    const agree = (got: Token[], want: Token[]) => got.filter((t, k) => t === want[k]).length;
    expect(agree(rb?.tokens ?? [], aloneB) + agree(rc?.tokens ?? [], aloneC)).toBeGreaterThanOrEqual(MAX);
    for (let i = 0; i < 4; i++) await engine.slot(i).clearHistory();
  });

  it("leaves out an idle slot whose evaluation lock is held", async () => {
    const rng = new Xoshiro128(`fill-locked-${preset}`);
    const [a, b] = [randomTokens(rng, 10, engine.vocabSize), randomTokens(rng, 10, engine.vocabSize)];
    for (let i = 0; i < 4; i++) await engine.slot(i).clearHistory();
    const held = await acquireLock([(engine.slot(1) as unknown as SequenceInternals)._lock, "evaluate"]);
    const before = engine.decodeStats.snapshot();
    try {
      await Promise.all([0, 3].map((i) => decode(engine, engine.slot(i), i === 0 ? a : b, { maxTokens: 8 })));
    } finally {
      held.dispose();
    }
    const since = decodeCountsSince(before, engine.decodeStats.snapshot()).batched;
    expect(since.bySequences["2"]).toBeGreaterThan(0);
    // Only slot 2 was filled.
    expect(since.fillers).toBe(since.bySequences["2"]);
    for (const i of [0, 3]) await engine.slot(i).clearHistory();
  });
});

describe("stepFill's and greedyPick's defaults", () => {
  it("are off on the CPU", async () => {
    const engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 2, contextSize: 128 });
    try {
      expect(engine.options.stepFill).toBe(false);
      expect(engine.options.greedyPick).toBe(false);
    } finally {
      await engine.dispose();
    }
  });
});
