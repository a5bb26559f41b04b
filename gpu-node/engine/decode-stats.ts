/**
 * What the engine's `llama_decode` calls held: how many sequences and tokens each decode step
 * carried, by path (`batched`: the step loop of batched-decode.ts, every busy slot's next token
 * in one decode; `native`: one sequence's greedy step in one native call, greedy-step.ts;
 * `library`: node-llama-cpp's own batch queue, where deposits, probes, restores' checks and
 * fallbacks run). Read by /metrics (`kvgraft_decode_steps_total`, `kvgraft_decode_batch_sequences`,
 * `kvgraft_decode_phase_seconds_total`) and by the benchmarks, which report the batch sizes that
 * actually occurred and where a step's wall time went.
 */

export const DECODE_PATHS = ["batched", "native", "library"] as const;
export type DecodePath = (typeof DECODE_PATHS)[number];

/**
 * Where a step of the batch loop spends its wall time, so that a slow step can be pinned on
 * llama.cpp's decode, the sampling or JavaScript: `gap` from the end of the previous step (or, if
 * later, the joining of the step's earliest member) to this one's start (the event-loop turn in
 * which members' consumers run and ask again), `lock` waiting for the sequences' and the
 * context's locks, `prepare` building the batch and the bookkeeping
 * after the decode, `decode` the `llama_decode` call, `sample` sampling every member (their
 * samples run at once on libuv's pool; this is the wall time of all of them). The native path's
 * one call decodes and picks the greedy token: it is all `decode`, its `sample` stays 0. The
 * library path is not timed.
 */
export const DECODE_PHASES = ["gap", "lock", "prepare", "decode", "sample"] as const;
export type DecodePhase = (typeof DECODE_PHASES)[number];

/** Totals of one path. */
export interface DecodePathCounts {
  /** Decode calls. */
  steps: number;
  /** Sequences summed over the calls (steps x mean batch size). */
  sequences: number;
  /** Tokens summed over the calls. */
  tokens: number;
  /**
   * Throwaway tokens given to idle slots between busy ones and after queries joining in
   * consecutive slots (batched path, `stepFill`), so that a step takes fewer forward passes; not
   * in `sequences` or `tokens`.
   */
  fillers: number;
  /**
   * Forward passes llama.cpp makes of the decode calls, as its sequential split would cut them
   * (step-fill.ts, forwardPasses: an estimate from its source); batched path only.
   */
  passes: number;
  /** Decode calls by the number of sequences they held ("1", "2", ...). */
  bySequences: Record<string, number>;
  /** Wall milliseconds of the batch loop's steps on this path, by phase. */
  phaseMs: Record<DecodePhase, number>;
}

export type DecodeCounts = Record<DecodePath, DecodePathCounts>;

/** Zero milliseconds in every phase. */
export const noPhases = (): Record<DecodePhase, number> => ({
  gap: 0,
  lock: 0,
  prepare: 0,
  decode: 0,
  sample: 0,
});
const empty = (): DecodePathCounts => ({
  steps: 0,
  sequences: 0,
  tokens: 0,
  fillers: 0,
  passes: 0,
  bySequences: {},
  phaseMs: noPhases(),
});

/** Counts decode calls; one per engine. */
export class DecodeStats {
  private counts: DecodeCounts = { batched: empty(), native: empty(), library: empty() };

  /**
   * One decode call of `sequences` sequences and `tokens` tokens in all, `fillers` throwaway
   * tokens and the `passes` it was cut into (0: not estimated).
   */
  record(path: DecodePath, sequences: number, tokens: number, fillers = 0, passes = 0): void {
    const c = this.counts[path];
    c.steps++;
    c.passes += passes;
    c.sequences += sequences;
    c.tokens += tokens;
    c.fillers += fillers;
    const key = String(sequences);
    c.bySequences[key] = (c.bySequences[key] ?? 0) + 1;
  }

  /** `ms` of wall time a step on `path` spent in `phase` (performance.now() differences). */
  time(path: DecodePath, phase: DecodePhase, ms: number): void {
    this.counts[path].phaseMs[phase] += ms;
  }

  /** A copy of the totals so far. */
  snapshot(): DecodeCounts {
    const copy = (c: DecodePathCounts): DecodePathCounts => ({
      ...c,
      bySequences: { ...c.bySequences },
      phaseMs: { ...c.phaseMs },
    });
    return {
      batched: copy(this.counts.batched),
      native: copy(this.counts.native),
      library: copy(this.counts.library),
    };
  }
}

/** `after` minus `before`: what a benchmark's window added. */
export function decodeCountsSince(before: DecodeCounts, after: DecodeCounts): DecodeCounts {
  const diff = (a: DecodePathCounts, b: DecodePathCounts): DecodePathCounts => {
    const bySequences: Record<string, number> = {};
    for (const [k, v] of Object.entries(a.bySequences)) {
      const d = v - (b.bySequences[k] ?? 0);
      if (d > 0) bySequences[k] = d;
    }
    const phaseMs = noPhases();
    for (const phase of DECODE_PHASES) phaseMs[phase] = a.phaseMs[phase] - b.phaseMs[phase];
    return {
      steps: a.steps - b.steps,
      sequences: a.sequences - b.sequences,
      tokens: a.tokens - b.tokens,
      fillers: a.fillers - b.fillers,
      passes: a.passes - b.passes,
      bySequences,
      phaseMs,
    };
  };
  return {
    batched: diff(after.batched, before.batched),
    native: diff(after.native, before.native),
    library: diff(after.library, before.library),
  };
}

/** Mean wall milliseconds of one batched step, by phase (`gapMsPerStep`, `decodeMsPerStep`, ...). */
export type StepPhaseMeans = Record<`${DecodePhase}MsPerStep`, number>;

/**
 * The batched path's phase totals over its steps (each is one `llama_decode`): where a step of
 * many sequences spent its wall time. Zeros when it took no step.
 */
export function batchedStepPhases(counts: DecodeCounts): StepPhaseMeans {
  return stepPhaseMeans(counts.batched.steps, counts.batched.phaseMs);
}

/** Phase totals (ms) over `steps` steps as per-step means; zeros when there were none. */
export function stepPhaseMeans(steps: number, phaseMs: Record<DecodePhase, number>): StepPhaseMeans {
  const mean = (phase: DecodePhase) => (steps > 0 ? Number((phaseMs[phase] / steps).toFixed(3)) : 0);
  return {
    gapMsPerStep: mean("gap"),
    lockMsPerStep: mean("lock"),
    prepareMsPerStep: mean("prepare"),
    decodeMsPerStep: mean("decode"),
    sampleMsPerStep: mean("sample"),
  };
}
