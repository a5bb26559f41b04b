/**
 * Batched decoding: every busy slot's next token in one `llama_decode` a step. node-llama-cpp
 * batches the evaluations of a context's sequences that happen to be queued together, but its
 * loop decodes whatever is queued the moment the previous batch ends, and a sequence whose
 * sampling or consumer is a few microtasks late misses it: eight concurrent grafts on tiny-llama
 * (CPU) shared a decode with 1.6 to 4.3 others on average, not 7 (docs/benchmarks.md). Here one
 * loop per engine owns the steps: a step takes every member that asked for its next token by the
 * time the event loop turns once after the previous step (so every member whose token was just
 * delivered is in, and a slow consumer does not hold the others back), decodes them together
 * and samples each with its own sampler (its temperature, top-k, top-p and seed).
 *
 * Continuous: a decode joins at the first step after it starts (after its slot's restore) with
 * its query tokens, which share the step's batch with the others' single tokens (a long query
 * takes its equal share of the batch a step until it is in), and leaves when it stops. The loop
 * takes the context's lock for each step and releases it between steps, so restores, deposits
 * and probes (node-llama-cpp's queue, exact-batching.ts) run between steps, never inside one.
 * A step with a single greedy member takes the native greedy step on our engine build
 * (greedy-step.ts: one call instead of decode plus sample); with `greedyPick`, a step's greedy
 * members take their tokens in one native call (step-sample.ts).
 *
 * One pass a step (`stepFill`): idle slots between busy ones get a throwaway token, and queries
 * joining in consecutive slots are padded to one length so that their remainder is one more pass
 * (step-fill.ts).
 *
 * Exactness: llama.cpp's result for a token depends on what shares its batch (exact-batching.ts),
 * so batched logits are not bit-identical to a sequence decoded alone; greedy and seeded tokens
 * agree unless two candidates are that close (test/batched-decode.test.ts compares them).
 * Like greedy-step.ts, it keeps node-llama-cpp 3.21.1's token bookkeeping of each sequence.
 * Each step's wall time is counted by phase (decode-stats.ts: gap, lock, prepare, decode, sample).
 */
import { acquireLock } from "lifecycle-utils";
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { DecodeStats } from "./decode-stats.js";
import { fitsWithoutShift, greedyStep } from "./greedy-step.js";
import type { NativeStateApi, SequenceInternals } from "./state-memory.js";
import { FILLER_TOKEN, forwardPasses, joinerPads, StepFill, type StepFillMode } from "./step-fill.js";
import { type AddonSampler, StepSampler, type StepSampling } from "./step-sample.js";

/** node-llama-cpp 3.21.1's addon context, as the batch loop calls it. */
interface AddonContext {
  initBatch(size: number): void;
  addToBatch(
    sequenceId: number,
    firstTokenIndex: number,
    tokens: Uint32Array,
    logitIndexes: Uint32Array,
  ): Uint32Array;
  decodeBatch(): Promise<void>;
  sampleToken(batchLogitIndex: number, sampler: AddonSampler): Promise<number>;
  removeTokenCellsFromSequence(sequenceId: number, startPos: number, endPos: number): boolean;
  getSequenceKvCacheMaxPosition(sequenceId: number): number;
}
interface SequenceSampling {
  _resolveSamplerConfig(options: StepSampling): object;
}

interface Member {
  readonly sequence: LlamaContextSequence;
  readonly seq: SequenceInternals & SequenceSampling;
  readonly sampling: StepSampling;
  /** node-llama-cpp's sampler configuration of this member, resolved once (its seed fixed). */
  readonly config: object;
  sampler: AddonSampler | null;
  /** Tokens still to evaluate before the next sample. */
  pending: Token[];
  /** Set while the member waits for its next token. */
  waiter: { resolve(token: Token): void; reject(err: unknown): void } | null;
  /** When it joined the loop (performance.now()): its first step's gap starts no earlier. */
  readonly joinedAt: number;
}

/** Members in one step and how many of their pending tokens go in. */
type Allotment = { member: Member; count: number };

export class DecodeBatcher {
  private readonly members = new Set<Member>();
  private looping = false;
  private readonly stepFill: StepFill;
  private readonly sampler: StepSampler;

  /**
   * `sequences`: every slot of the context; `stepFill`: give idle slots between busy ones a
   * throwaway token so that a step is one pass (see the module's comment); `greedyPick`: a step's
   * greedy members take their tokens in one native call on our engine build (step-sample.ts).
   */
  constructor(
    private readonly context: LlamaContext,
    private readonly model: LlamaModel,
    private readonly stats: DecodeStats,
    private readonly nativeApi: NativeStateApi | null,
    sequences: readonly LlamaContextSequence[] = [],
    stepFill: StepFillMode = false,
    greedyPick = false,
  ) {
    this.stepFill = new StepFill(sequences, stepFill);
    this.sampler = new StepSampler(model, greedyPick ? nativeApi : null);
  }

  /** Decodes running through the loop now. */
  get size(): number {
    return this.members.size;
  }

  /**
   * Whether `sequence` can decode `count` more tokens here: without a context shift (the loop
   * never shifts; node-llama-cpp's evaluation does) and without loaded token predictions.
   */
  accepts(sequence: LlamaContextSequence, count: number): boolean {
    const seq = sequence as unknown as SequenceInternals;
    return fitsWithoutShift(sequence, count) && seq._loadedTokenPredictions.length === 0;
  }

  /**
   * The sampled tokens after `input`, with node-llama-cpp's semantics: end of generation stops
   * without yielding its token, and the last yielded token is evaluated only if asked for more.
   * The caller holds the slot (nothing else evaluates on the sequence meanwhile).
   */
  async *steps(
    sequence: LlamaContextSequence,
    input: Token[],
    sampling: StepSampling,
  ): AsyncGenerator<Token, void, void> {
    if (input.length === 0) throw new Error("a decode needs at least one token");
    const seq = sequence as unknown as SequenceInternals & SequenceSampling;
    const member: Member = {
      sequence,
      seq,
      sampling,
      config: seq._resolveSamplerConfig(sampling),
      sampler: null,
      pending: [],
      waiter: null,
      joinedAt: performance.now(),
    };
    this.members.add(member);
    try {
      let next = input;
      while (true) {
        const token = await this.request(member, next);
        if (this.model.isEogToken(token)) return;
        yield token;
        next = [token];
      }
    } finally {
      this.members.delete(member);
      member.sampler?.dispose();
    }
  }

  /** Queues the member's tokens for the next step; resolves to the token sampled after them. */
  private request(member: Member, tokens: Token[]): Promise<Token> {
    return new Promise<Token>((resolve, reject) => {
      member.pending = tokens;
      member.waiter = { resolve, reject };
      if (!this.looping) void this.loop();
    });
  }

  /** Steps while members wait; the event loop turns once before a step some member is not waiting for. */
  private async loop(): Promise<void> {
    this.looping = true;
    try {
      let stepEnded = performance.now();
      while (true) {
        // Members whose token was just delivered ask for the next within this turn: wait for it
        // unless every member is waiting already (a decode alone steps without the turn).
        if ([...this.members].some((m) => m.waiter === null)) await new Promise<void>((r) => setImmediate(r));
        const ready = [...this.members].filter((m) => m.waiter !== null);
        if (ready.length === 0) return;
        // A loop that outlived its last members (it awaited the turn while they left) steps for
        // members that joined since: the gap starts when the earliest of them joined, not at a
        // step that was not theirs.
        const gapFrom = Math.max(stepEnded, Math.min(...ready.map((m) => m.joinedAt)));
        await this.step(ready, performance.now() - gapFrom).catch((err: unknown) => {
          for (const m of ready) this.settle(m, null, err);
        });
        stepEnded = performance.now();
      }
    } finally {
      this.looping = false;
    }
  }

  /** One step; `gapMs` is the wall time since the previous step ended (decode-stats.ts, phases). */
  private async step(ready: Member[], gapMs: number): Promise<void> {
    const only = ready[0] as Member;
    if (ready.length === 1 && only.sampling.temperature === 0 && this.nativeApi) {
      this.stats.time("native", "gap", gapMs);
      const started = performance.now();
      const token = await greedyStep(this.nativeApi, only.sequence, only.pending, this.stats);
      // Its locks, decode and greedy pick are one call here: all of it counts as the decode.
      this.stats.time("native", "decode", performance.now() - started);
      this.settle(only, token);
      return;
    }
    this.stats.time("batched", "gap", gapMs);
    const locking = performance.now();
    const evaluatorLocks = [];
    for (const m of ready) evaluatorLocks.push(await acquireLock([m.seq._lock, "evaluate"]));
    const contextLock = await acquireLock([this.context, "context"]);
    this.stats.time("batched", "lock", performance.now() - locking);
    let inUse: { dispose(): void } | undefined;
    try {
      inUse = (
        this.context as unknown as SequenceInternals["_context"]
      )._backendContextDisposeGuard.createPreventDisposalHandle();
      await this.decodeAndSample(ready);
    } finally {
      inUse?.dispose();
      contextLock.dispose();
      for (const lock of evaluatorLocks) lock.dispose();
    }
  }

  /** One llama_decode over the members' allotted tokens, then each finished member's sample. */
  private async decodeAndSample(ready: Member[]): Promise<void> {
    const preparing = performance.now();
    const ctx = (ready[0] as Member).seq._context._ctx as AddonContext;
    const batch = allot(bySequenceId(ready), this.context.batchSize);
    const total = batch.reduce((sum, a) => sum + a.count, 0);
    const fillers = await this.stepFill.take(
      ctx,
      batch.map((a) => a.member.seq._sequenceId),
      this.context.batchSize - total,
    );
    const pads = this.stepFill.padsJoiners
      ? joinerPads(
          batch.map(({ member, count }) => ({
            id: member.seq._sequenceId,
            tokens: count,
            free: this.context.contextSize - 1 - (member.seq._nextTokenIndex + count),
          })),
          this.context.batchSize - total - fillers.length,
        )
      : batch.map(() => 0);
    const padTotal = pads.reduce((sum, n) => sum + n, 0);
    const logitIndex = new Map<Member, number>();
    let decoding: number;
    let passes = 0;
    try {
      ctx.initBatch(total + padTotal + fillers.length);
      // In ascending sequence ids, members and fillers together: one run of consecutive ids.
      const adds = [
        ...batch.map(({ member, count }, i) => ({
          id: member.seq._sequenceId,
          tokens: count + (pads[i] as number),
          add: () => {
            const last = count === member.pending.length;
            const tokens = member.pending.slice(0, count);
            for (let p = 0; p < (pads[i] as number); p++) tokens.push(FILLER_TOKEN as Token);
            const indexes = ctx.addToBatch(
              member.seq._sequenceId,
              member.seq._nextTokenIndex,
              Uint32Array.from(tokens),
              Uint32Array.from(last ? [count - 1] : []),
            );
            if (last) logitIndex.set(member, indexes[0] as number);
          },
        })),
        ...fillers.map((f) => ({
          id: f.sequenceId,
          tokens: 1,
          add: () =>
            ctx.addToBatch(f.sequenceId, f.position, Uint32Array.of(FILLER_TOKEN), new Uint32Array(0)),
        })),
      ].sort((a, b) => a.id - b.id);
      for (const { add } of adds) add();
      passes = forwardPasses(adds, this.context.batchSize);
      decoding = performance.now();
      this.stats.time("batched", "prepare", decoding - preparing);
      try {
        await ctx.decodeBatch();
      } catch (err) {
        // A failed decode may leave cells past what each sequence records: remove them.
        for (const { member } of batch)
          ctx.removeTokenCellsFromSequence(member.seq._sequenceId, member.seq._nextTokenIndex, -1);
        throw err;
      }
    } finally {
      // The pads' and fillers' cells go whatever happened, and the fillers' slots are free again.
      batch.forEach(({ member, count }, i) => {
        if ((pads[i] as number) > 0)
          ctx.removeTokenCellsFromSequence(member.seq._sequenceId, member.seq._nextTokenIndex + count, -1);
      });
      for (const f of fillers) {
        ctx.removeTokenCellsFromSequence(f.sequenceId, f.position, -1);
        f.lock.dispose();
      }
    }
    const decoded = performance.now();
    this.stats.time("batched", "decode", decoded - decoding);
    this.stats.record("batched", batch.length, total, fillers.length + padTotal, passes);
    for (const { member, count } of batch) {
      const evaluated = member.pending.slice(0, count);
      member.pending = member.pending.slice(count);
      // In place, as greedy-step.ts does (node-llama-cpp's erase edits this array in place too).
      for (const token of evaluated) member.seq._contextTokens.push(token);
      member.seq._nextTokenIndex += count;
      const outputs = logitIndex.has(member) ? 1 : 0;
      member.sequence.tokenMeter.useTokens(count - outputs, "input");
      if (outputs) member.sequence.tokenMeter.useTokens(outputs, "output");
    }
    const sampling = performance.now();
    this.stats.time("batched", "prepare", sampling - decoded);
    const sampled = await this.sampler.sample(ctx, [...logitIndex]);
    this.stats.time("batched", "sample", performance.now() - sampling);
    // Delivered once all are sampled: a consumer's work on its token (microtasks of the resolve)
    // runs outside the sample phase, in the gap before the next step.
    for (const { member, token, err } of sampled) this.settle(member, token, err);
  }

  private settle(member: Member, token: Token | null, err?: unknown): void {
    const waiter = member.waiter;
    if (!waiter) return;
    member.waiter = null;
    if (token === null) {
      member.pending = [];
      waiter.reject(err);
    } else waiter.resolve(token);
  }
}

/**
 * The members in ascending order of their sequence ids. With a KV stream per sequence (what
 * node-llama-cpp creates), llama.cpp splits a batch into ubatches of consecutive sequence ids
 * taken in batch order (llama_batch_allocr::split_equal with `sequential`), and each ubatch is a
 * whole forward pass that reads all the weights again: in the order they asked, a step could
 * cost up to a pass per member (the H200's 32 distinct grafts, 2026-12-02: ~4.8 ms a step per
 * sequence). Sorted, a step is one pass per run of consecutive busy slots.
 */
export function bySequenceId<T extends { seq: { _sequenceId: number } }>(members: readonly T[]): T[] {
  return [...members].sort((a, b) => a.seq._sequenceId - b.seq._sequenceId);
}

/**
 * An equal share of the batch for each member and what is left to the members that have more
 * (node-llama-cpp's `maximumParallelism`, as exactFirstStrategy shares a batch): single decode
 * tokens always fit, a long query is spread over steps.
 */
function allot(members: Member[], size: number): Allotment[] {
  const share = Math.max(1, Math.floor(size / members.length));
  let free = size;
  const batch: Allotment[] = [];
  for (const member of members) {
    const count = Math.min(member.pending.length, share, free);
    if (count === 0) continue;
    batch.push({ member, count });
    free -= count;
  }
  for (const entry of batch) {
    const more = Math.min(entry.member.pending.length - entry.count, free);
    entry.count += more;
    free -= more;
  }
  return batch;
}
