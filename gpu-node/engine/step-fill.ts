/**
 * One forward pass a batched step (the engine's `stepFill`). With a KV stream per sequence
 * llama.cpp cuts a batch into one forward pass per run of consecutive sequence ids
 * (batched-decode.ts, bySequenceId), and each pass reads all the weights again, so busy slots
 * scattered among idle ones cost a pass each gap. Here the idle slots between the first and the
 * last busy one get a throwaway token each at the end of what they hold, decoded in the step
 * without logits and removed right after: the run is whole and the step one pass. An idle slot's
 * cells stay as they were (the token goes in a new cell and the removal frees it), so a block
 * resident there is untouched; a slot whose evaluation lock is held (a restore, a deposit's own
 * evaluation) is left out and its gap stays. Sliding-window caches without the full cache are
 * never filled (engine.ts): a token there can drop cells out of the window. It pays where a pass
 * is bound by reading the weights (a GPU); on a CPU a pass costs by its tokens, so there it is
 * off unless asked for.
 */
import { acquireLock, isLockActive } from "lifecycle-utils";
import type { LlamaContextSequence } from "node-llama-cpp";
import type { SequenceInternals } from "./state-memory.js";

/** An idle slot's throwaway token in a step: its sequence id, position and evaluation lock. */
export type StepFiller = { sequenceId: number; position: number; lock: { dispose(): void } };

/**
 * How batched steps fill: `true` gives idle slots between busy ones a throwaway token and pads
 * joining queries (joinerPads), `"fillers"` the idle slots' tokens alone, `false` neither.
 */
export type StepFillMode = boolean | "fillers";

/** The token a filler decodes: any id does, no logits are read. */
export const FILLER_TOKEN = 0;

/** The context's slots that can take a filler; none when the engine's `stepFill` is off. */
export class StepFill {
  private readonly slots: Map<number, SequenceInternals>;

  /** Whether steps pad queries joining in consecutive slots (joinerPads). */
  readonly padsJoiners: boolean;

  constructor(sequences: readonly LlamaContextSequence[], mode: StepFillMode) {
    this.padsJoiners = mode === true;
    this.slots = new Map(
      mode !== false
        ? sequences.map((s) => {
            const seq = s as unknown as SequenceInternals;
            return [seq._sequenceId, seq] as const;
          })
        : [],
    );
  }

  /**
   * Fillers for the idle slots between the step's first and last member (`busy`: the members'
   * sequence ids in ascending order), at most `room` of them, each holding its slot's evaluation
   * lock until the caller disposes it. A slot is left out when its lock is held, when it has token
   * predictions loaded, or when its context is full.
   */
  async take(
    ctx: { getSequenceKvCacheMaxPosition(sequenceId: number): number },
    busy: readonly number[],
    room: number,
  ): Promise<StepFiller[]> {
    if (this.slots.size === 0 || busy.length < 2) return [];
    const members = new Set(busy);
    const first = busy[0] as number;
    const last = busy.at(-1) as number;
    const pending: Array<Omit<StepFiller, "lock"> & { lock: Promise<{ dispose(): void }> }> = [];
    for (let id = first + 1; id < last && pending.length < room; id++) {
      const seq = this.slots.get(id);
      if (!seq || members.has(id) || seq._loadedTokenPredictions.length > 0) continue;
      const scope = [seq._lock, "evaluate"] as const;
      if (isLockActive(scope)) continue;
      const position = ctx.getSequenceKvCacheMaxPosition(id) + 1;
      if (position + 1 > seq._context.contextSize) continue;
      // The lock is free: acquireLock takes it before it returns (nothing can run in between),
      // and its promise settles at once.
      pending.push({ sequenceId: id, position, lock: acquireLock(scope) });
    }
    return Promise.all(pending.map(async (f) => ({ ...f, lock: await f.lock })));
  }
}

/** A step's entry as llama.cpp splits it: a sequence id and its tokens (contiguous in the batch). */
export type StepEntry = { id: number; tokens: number };

/**
 * Throwaway tokens to pad each query joining this step, so that the joiners' remainders share a
 * pass. After the first pass (one token of every busy slot) llama.cpp's sequential split takes
 * the same number of tokens from each sequence of a run of consecutive ids, so joiners in
 * consecutive slots with queries of 17 and 19 tokens still cost two more passes, and each pass
 * reads all the weights (5.3 ms on the H200's `12b` preset: at 200 joiners a second, a pass per
 * joiner alone would need more than the GPU's whole time). The pad tokens go after a joiner's
 * query, at later positions of its own sequence, so no real token attends to them (the causal
 * mask); the caller removes their cells after the step, as it does the fillers'. `entries`: the
 * step's members in ascending ids, each with the tokens it evaluates and the cells it may use
 * beyond them (`free`). Joiners are members with more than one token; a run of consecutive
 * joiners is padded to its longest, a joiner only where its slot has the cells, within `room`
 * tokens in all. Returns each entry's pad count (0 for most).
 */
export function joinerPads(
  entries: readonly { id: number; tokens: number; free: number }[],
  room: number,
): number[] {
  const pads = entries.map(() => 0);
  const joins = (i: number) => (entries[i] as { tokens: number }).tokens > 1;
  let left = room;
  for (let start = 0; start < entries.length; ) {
    let end = start;
    if (!joins(start)) {
      start++;
      continue;
    }
    while (
      end + 1 < entries.length &&
      joins(end + 1) &&
      entries[end + 1]?.id === (entries[end]?.id as number) + 1
    )
      end++;
    if (end > start) {
      const longest = Math.max(...entries.slice(start, end + 1).map((e) => e.tokens));
      for (let i = start; i <= end; i++) {
        const e = entries[i] as { tokens: number; free: number };
        const pad = longest - e.tokens;
        if (pad > 0 && pad <= e.free && pad <= left) {
          pads[i] = pad;
          left -= pad;
        }
      }
    }
    start = end + 1;
  }
  return pads;
}

/**
 * How many forward passes llama.cpp makes of a batch with a KV stream per sequence: its
 * `split_equal(n_ubatch, sequential = true)` (src/llama-batch.cpp) as it runs on `entries` in batch
 * order. Each pass takes a run of consecutive sequence ids among the tokens not yet taken (a
 * sequence with nothing left ends the run) and the same number of tokens from each, as many as
 * all have and the ubatch holds. An estimate read from the source, not a count llama.cpp reports:
 * `kvgraft_decode_passes_total`.
 */
export function forwardPasses(entries: readonly StepEntry[], nUbatch: number): number {
  const left = entries.map((e) => e.tokens);
  let passes = 0;
  while (left.some((n) => n > 0)) {
    const run: number[] = [];
    for (let i = 0; i < entries.length; i++) {
      if ((left[i] as number) === 0) continue;
      if (
        run.length > 0 &&
        (entries[i] as StepEntry).id !== (entries[run.at(-1) as number] as StepEntry).id + 1
      )
        break;
      run.push(i);
      if (run.length > nUbatch) break;
    }
    let take = 0;
    while (run.every((i) => (left[i] as number) > take)) {
      take++;
      if ((take + 1) * run.length > nUbatch) break;
    }
    for (const i of run) left[i] = (left[i] as number) - take;
    passes++;
  }
  return passes;
}
