/**
 * Greedy decoding in one native call a token on our engine build (`greedyStep` in
 * native/addon/KvgraftState.cpp). node-llama-cpp's `evaluate` takes two thread-pool calls a token
 * (decode, then sample) and runs its batch queue in JavaScript between and around them; on the
 * H200 that was ~1.2 ms of a 10.7 ms hot step of the 12b preset. Same tokens, same positions, same
 * batches for a sequence evaluated alone (the test compares them with node-llama-cpp's path).
 *
 * A step holds the context's lock for its one decode, so other slots' work interleaves between
 * steps, but it is not batched with theirs: the batch loop (batched-decode.ts) takes it for a
 * step whose only member decodes greedily.
 * Like `state-memory.ts`, it updates node-llama-cpp 3.21.1's token bookkeeping of the sequence.
 */
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { DecodeStats } from "./decode-stats.js";
import { type NativeStateApi, type SequenceInternals, withSequenceLocks } from "./state-memory.js";

/**
 * Evaluates `tokens` after what the sequence holds and returns the next token, greedily (the
 * first token of highest logit, as llama.cpp's greedy sampler picks it). The tokens and their
 * cells are the sequence's afterwards; on failure it holds what it held before. Its decode calls
 * (one per batch of input) are counted in `stats` as the native path's.
 */
export async function greedyStep(
  api: NativeStateApi,
  sequence: LlamaContextSequence,
  tokens: readonly Token[],
  stats?: DecodeStats,
): Promise<Token> {
  if (tokens.length === 0) throw new Error("a greedy step needs at least one token");
  const seq = sequence as unknown as SequenceInternals;
  return withSequenceLocks(seq, async () => {
    // The engine's slots have no token predictor; erasing loaded predictions here would need the
    // context lock this already holds, so a sequence that has some is refused.
    await seq._abortTokenPredictor(true);
    if (seq._loadedTokenPredictions.length > 0)
      throw new Error("a greedy step cannot follow token predictions");
    const start = seq._nextTokenIndex;
    if (!fitsWithoutShift(sequence, tokens.length))
      throw new Error(
        `${tokens.length} more tokens do not fit the slot (${start} of ${sequence.contextSize} used)`,
      );
    // node-llama-cpp's batch size, not llama.cpp's (one more on sliding-window models): the same batches.
    const batch = seq._context.batchSize;
    const next = await api.greedyStep(
      seq._context._ctx,
      seq._sequenceId,
      Uint32Array.from(tokens),
      start,
      batch,
    );
    for (let first = 0; first < tokens.length; first += batch)
      stats?.record("native", 1, Math.min(batch, tokens.length - first));
    // In place (node-llama-cpp's erase edits this array in place too): no copy of the whole
    // sequence's tokens a step.
    seq._contextTokens.length = start;
    for (const token of tokens) seq._contextTokens.push(token);
    seq._nextTokenIndex = start + tokens.length;
    // Counted as node-llama-cpp counts a decode: the token with logits is output, the rest input.
    sequence.tokenMeter.useTokens(tokens.length - 1, "input");
    sequence.tokenMeter.useTokens(1, "output");
    return next as Token;
  });
}

/**
 * Whether `count` tokens can be decoded greedily after what the sequence holds without a context
 * shift (node-llama-cpp keeps the context's last cell free: its own free-space rule).
 */
export function fitsWithoutShift(sequence: LlamaContextSequence, count: number): boolean {
  return sequence.nextTokenIndex + count <= sequence.contextSize - 1;
}
