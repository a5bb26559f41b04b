/**
 * What the engine's `llama_decode` calls held: how many sequences and tokens each decode step
 * carried, by path (`batched`: the step loop of batched-decode.ts, every busy slot's next token
 * in one decode; `native`: one sequence's greedy step in one native call, greedy-step.ts;
 * `library`: node-llama-cpp's own batch queue, where deposits, probes, restores' checks and
 * fallbacks run). Read by /metrics (`kvgraft_decode_steps_total`, `kvgraft_decode_batch_sequences`)
 * and by the benchmarks, which report the batch sizes that actually occurred.
 */

export const DECODE_PATHS = ["batched", "native", "library"] as const;
export type DecodePath = (typeof DECODE_PATHS)[number];

/** Totals of one path. */
export interface DecodePathCounts {
  /** Decode calls. */
  steps: number;
  /** Sequences summed over the calls (steps x mean batch size). */
  sequences: number;
  /** Tokens summed over the calls. */
  tokens: number;
  /** Decode calls by the number of sequences they held ("1", "2", ...). */
  bySequences: Record<string, number>;
}

export type DecodeCounts = Record<DecodePath, DecodePathCounts>;

const empty = (): DecodePathCounts => ({ steps: 0, sequences: 0, tokens: 0, bySequences: {} });

/** Counts decode calls; one per engine. */
export class DecodeStats {
  private counts: DecodeCounts = { batched: empty(), native: empty(), library: empty() };

  /** One decode call of `sequences` sequences and `tokens` tokens in all. */
  record(path: DecodePath, sequences: number, tokens: number): void {
    const c = this.counts[path];
    c.steps++;
    c.sequences += sequences;
    c.tokens += tokens;
    const key = String(sequences);
    c.bySequences[key] = (c.bySequences[key] ?? 0) + 1;
  }

  /** A copy of the totals so far. */
  snapshot(): DecodeCounts {
    const copy = (c: DecodePathCounts): DecodePathCounts => ({ ...c, bySequences: { ...c.bySequences } });
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
    return {
      steps: a.steps - b.steps,
      sequences: a.sequences - b.sequences,
      tokens: a.tokens - b.tokens,
      bySequences,
    };
  };
  return {
    batched: diff(after.batched, before.batched),
    native: diff(after.native, before.native),
    library: diff(after.library, before.library),
  };
}
