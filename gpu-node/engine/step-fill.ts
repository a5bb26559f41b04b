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

/** The token a filler decodes: any id does, no logits are read. */
export const FILLER_TOKEN = 0;

/** The context's slots that can take a filler; none when the engine's `stepFill` is off. */
export class StepFill {
  private readonly slots: Map<number, SequenceInternals>;

  constructor(sequences: readonly LlamaContextSequence[], enabled: boolean) {
    this.slots = new Map(
      enabled
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
