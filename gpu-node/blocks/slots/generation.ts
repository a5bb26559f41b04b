/**
 * Decoding in a slot whose context is ready (a restored block, or empty): the sampled tokens,
 * stopped at `maxTokens`, end of generation or an abort, and the result with its output hash and
 * timings.
 */
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { sha256OfTokens } from "../../../shared/hash.js";
import type { GenerationResult, Tier } from "../../../shared/protocol.js";
import type { Engine } from "../../engine/engine.js";
import type { GenerationOptions } from "../types.js";

/** The tokens of one decode and where its time went. */
export interface Decoded {
  tokens: Token[];
  queryMs: number;
  decodeMs: number;
  finishReason: GenerationResult["finishReason"];
  /**
   * Which decoding ran it: the engine's batch loop (batched-decode.ts: every busy slot's next
   * token in one decode a step; a greedy step alone takes the native greedy call on our engine
   * build), or node-llama-cpp's evaluation (a decode that needs a context shift).
   */
  path: "batched" | "library";
}

/** Erases everything after the first `n` tokens (the hot tier's graft: ~0.1 ms). */
export async function truncate(seq: LlamaContextSequence, n: number): Promise<void> {
  if (seq.nextTokenIndex > n) await seq.eraseContextTokenRanges([{ start: n, end: seq.nextTokenIndex }]);
}

/**
 * Evaluates `input` after what the slot holds, then samples until a stop. Through the engine's
 * batch loop, which decodes every slot decoding at once in one llama_decode a step and samples
 * each with its own settings; a decode that would need a context shift goes through
 * node-llama-cpp's evaluation instead, which shifts.
 */
export async function decode(
  engine: Engine,
  seq: LlamaContextSequence,
  input: Token[],
  options: GenerationOptions,
): Promise<Decoded> {
  const sampling = options.sampling ?? { temperature: 0 };
  const t0 = performance.now();
  if (options.signal?.aborted)
    return { tokens: [], queryMs: 0, decodeMs: 0, finishReason: "aborted", path: "batched" };
  const batched = input.length > 0 && engine.batcher.accepts(seq, input.length + options.maxTokens);
  const steps = batched ? engine.batcher.steps(seq, input, sampling) : librarySteps(seq, input, sampling);
  return { ...(await collect(engine, steps, options, t0)), path: batched ? "batched" : "library" };
}

/** node-llama-cpp's evaluation: the sampled tokens until end of generation. */
function librarySteps(
  seq: LlamaContextSequence,
  input: Token[],
  sampling: NonNullable<GenerationOptions["sampling"]>,
): AsyncGenerator<Token, void, void> {
  return seq.evaluate(input, {
    temperature: sampling.temperature,
    ...(sampling.topK !== undefined ? { topK: sampling.topK } : {}),
    ...(sampling.topP !== undefined ? { topP: sampling.topP } : {}),
    ...(sampling.seed !== undefined ? { seed: sampling.seed } : {}),
  });
}

/** Takes tokens from `steps` until a stop, timing the first token and the rest. */
async function collect(
  engine: Engine,
  steps: AsyncGenerator<Token, void, void>,
  options: GenerationOptions,
  t0: number,
): Promise<Omit<Decoded, "path">> {
  const tokens: Token[] = [];
  let finishReason: GenerationResult["finishReason"] = "eog";
  let firstAt = t0;
  for await (const token of steps) {
    if (tokens.length === 0) firstAt = performance.now();
    tokens.push(token);
    // With the tokens before it, so a SentencePiece piece keeps its leading space (as in the whole text).
    options.onToken?.(token, engine.model.detokenize([token], false, tokens.slice(-5, -1)));
    if (tokens.length >= options.maxTokens) {
      finishReason = "maxTokens";
      break;
    }
    if (options.signal?.aborted) {
      finishReason = "aborted";
      break;
    }
  }
  const end = performance.now();
  return {
    tokens,
    queryMs: (tokens.length ? firstAt : end) - t0,
    decodeMs: end - (tokens.length ? firstAt : end),
    finishReason,
  };
}

/** The protocol's result of a decode: text, tokens, output hash, provenance and timings. */
export async function generationResult(
  engine: Engine,
  decoded: Decoded,
  meta: {
    blockSha256: string | null;
    tier: Tier | null;
    tokensIn: number;
    restoreMs: number;
    started: number;
  },
): Promise<GenerationResult> {
  return {
    text: engine.model.detokenize(decoded.tokens),
    tokens: decoded.tokens.map(Number),
    outputSha256: await sha256OfTokens(decoded.tokens.map(Number)),
    blockSha256: meta.blockSha256,
    tier: meta.tier,
    tokensIn: meta.tokensIn,
    tokensOut: decoded.tokens.length,
    timings: {
      restoreMs: meta.restoreMs,
      queryMs: decoded.queryMs,
      decodeMs: decoded.decodeMs,
      totalMs: performance.now() - meta.started,
    },
    finishReason: decoded.finishReason,
  };
}
