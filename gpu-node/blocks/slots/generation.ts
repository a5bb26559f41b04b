/**
 * Decoding in a slot whose context is ready (a restored block, or empty): the sampled tokens,
 * stopped at `maxTokens`, end of generation or an abort, and the result with its output hash and
 * timings.
 */
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { sha256OfTokens } from "../../../shared/hash.js";
import type { GenerationResult, Tier } from "../../../shared/protocol.js";
import type { Engine } from "../../engine/engine.js";
import { fitsWithoutShift, greedyStep } from "../../engine/greedy-step.js";
import type { GenerationOptions } from "../types.js";

/** The tokens of one decode and where its time went. */
export interface Decoded {
  tokens: Token[];
  queryMs: number;
  decodeMs: number;
  finishReason: GenerationResult["finishReason"];
  /**
   * Which decoding it began with: one native call a token (greedy-step.ts; it hands over to
   * node-llama-cpp's once another decode runs on the engine), or node-llama-cpp's evaluation.
   */
  path: "native" | "library";
}

/** Erases everything after the first `n` tokens (the hot tier's graft: ~0.1 ms). */
export async function truncate(seq: LlamaContextSequence, n: number): Promise<void> {
  if (seq.nextTokenIndex > n) await seq.eraseContextTokenRanges([{ start: n, end: seq.nextTokenIndex }]);
}

/** Decodes running now per engine: a decode alone on its engine may take the native greedy path. */
const running = new WeakMap<Engine, number>();

/**
 * Evaluates `input` after what the slot holds, then samples until a stop. Greedy decoding on our
 * engine build, alone on its engine and without a context shift, takes one native call a token
 * (greedy-step.ts) for as long as no other decode runs on the engine, then hands over to
 * node-llama-cpp's evaluation, which batches the slots decoding at once; everything else goes
 * through that evaluation from the start. Both give the same tokens.
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
    return { tokens: [], queryMs: 0, decodeMs: 0, finishReason: "aborted", path: "library" };
  const alone = (running.get(engine) ?? 0) === 0;
  running.set(engine, (running.get(engine) ?? 0) + 1);
  try {
    const api = engine.nativeApi;
    const native =
      api !== null &&
      alone &&
      input.length > 0 &&
      sampling.temperature === 0 &&
      fitsWithoutShift(seq, input.length + options.maxTokens);
    const steps = native
      ? nativeSteps(api, seq, input, () => (running.get(engine) ?? 0) > 1)
      : librarySteps(seq, input, sampling);
    return { ...(await collect(engine, steps, options, t0)), path: native ? "native" : "library" };
  } finally {
    running.set(engine, (running.get(engine) ?? 1) - 1);
  }
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

/**
 * Greedy steps on the engine build, with node-llama-cpp's semantics: end of generation stops
 * without yielding the token, and the last yielded token is evaluated only if asked for more.
 * Once `shared()` says another decode runs on the engine, the rest goes through node-llama-cpp's
 * greedy evaluation, which batches them (it starts from the token not evaluated yet).
 */
async function* nativeSteps(
  api: NonNullable<Engine["nativeApi"]>,
  seq: LlamaContextSequence,
  input: Token[],
  shared: () => boolean,
): AsyncGenerator<Token, void, void> {
  let next = input;
  while (true) {
    const token = await greedyStep(api, seq, next);
    if (seq.model.isEogToken(token)) return;
    yield token;
    next = [token];
    if (shared()) {
      yield* librarySteps(seq, next, { temperature: 0 });
      return;
    }
  }
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
