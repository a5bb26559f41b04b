/**
 * The in-memory state path of kvgraft's engine build (gpu-node/engine/native/, built by
 * scripts/build-engine.sh): a sequence's state saved to and loaded from caller memory, which on a
 * GPU is page-locked, instead of node-llama-cpp's file path (a pageable temporary and a
 * synchronous copy per tensor, ~2.5 GB/s). The bytes are exactly a block file's bytes: the
 * llama.cpp sequence-state file header (magic, version, token count, token ids) followed by the
 * state, so one block hash covers both paths.
 *
 * This reaches into node-llama-cpp 3.21.1's internals (the addon handle, the sequence's token
 * bookkeeping and its locks); the version is pinned exactly for that reason.
 */
import { acquireLock } from "lifecycle-utils";
import type { Llama, LlamaContext, LlamaContextSequence, Token } from "node-llama-cpp";
import { unprocessable } from "../errors.js";

/** An arena of host memory in the addon (pinned on a GPU), addressed by offset. */
export type ArenaHandle = { readonly __arena: unique symbol };

/** Hashing threads following a filling arena range (hashFollow). */
export type HashFollower = { readonly __follower: unique symbol };

/** The API our addon patch adds (KvgraftState.cpp); absent from the npm prebuilt binaries. */
export interface NativeStateApi {
  apiVersion(): number;
  /** Page-locked memory of the GPU backend when there is one, else page-aligned memory. */
  allocArena(size: number): { arena: ArenaHandle; pinned: boolean; size: number };
  copyOut(arena: ArenaHandle, offset: number, length: number): Buffer;
  copyIn(arena: ArenaHandle, offset: number, bytes: Buffer): void;
  /** Copies the buffers, one after another, into the arena from `offset` on, on the thread pool. */
  copyInAsync(arena: ArenaHandle, offset: number, buffers: Buffer[]): Promise<void>;
  sequenceStateSize(context: unknown, sequenceId: number): number;
  saveSequenceState(
    context: unknown,
    sequenceId: number,
    arena: ArenaHandle,
    offset: number,
    capacity: number,
  ): Promise<number>;
  loadSequenceState(
    context: unknown,
    sequenceId: number,
    arena: ArenaHandle,
    offset: number,
    size: number,
  ): Promise<number>;
  copySequence(context: unknown, source: number, target: number): void;
  wipeSequence(context: unknown, sequenceId: number): boolean;
  /**
   * llama.cpp's own evaluation timings since the previous call (then reset): from each decode's
   * start to the synchronize that ends it. Times stay 0 unless the context tracks performance.
   */
  takeEvalTimings(context: unknown): EvalTimings;
  /**
   * Evaluates `tokens` at positions `startPos`... of the sequence, in batches of `batchSize`, and
   * resolves to the next token, greedily (the first of highest logit), in one call on the thread
   * pool; on failure the sequence's cells from `startPos` on are removed. The caller holds the
   * context's lock.
   */
  greedyStep(
    context: unknown,
    sequenceId: number,
    tokens: Uint32Array,
    startPos: number,
    batchSize: number,
  ): Promise<number>;
  /**
   * The greedy token (the first of highest logit) of each logit row of the last decode, by batch
   * index, in one call on the thread pool (the rows split over a few threads). The caller holds
   * the context's lock.
   */
  greedyPick(context: unknown, batchIndexes: Uint32Array): Promise<Uint32Array>;
  /**
   * Reads `readLength` bytes of the file at `fileOffset` into the arena at `offset` and resolves
   * to the SHA-256 of `arena[offset, offset + length)`; on the thread pool.
   */
  readChunk(
    fd: number,
    arena: ArenaHandle,
    offset: number,
    length: number,
    fileOffset: number,
    readLength: number,
  ): Promise<string>;
  /** SHA-256 of `arena[offset, offset + length)`, on the thread pool. */
  hashRange(arena: ArenaHandle, offset: number, length: number): Promise<string>;
  /**
   * Starts a thread of the pool hashing `arena[offset, offset + length)` as it fills, in order:
   * `digest` resolves to its SHA-256 once `hashAdvance` moved the filled prefix to the end, and
   * rejects after `hashCancel` (or two minutes without a byte).
   */
  hashFollow(
    arena: ArenaHandle,
    offset: number,
    length: number,
  ): { follower: HashFollower; digest: Promise<string> };
  /** The followed range's bytes before `end` are in place. */
  hashAdvance(follower: HashFollower, end: number): void;
  /** Stops the follower's threads without waiting for more bytes. */
  hashCancel(follower: HashFollower): void;
  /** Writes `arena[offset, offset + length)` to the file at `fileOffset`, on the thread pool. */
  writeChunk(
    fd: number,
    arena: ArenaHandle,
    offset: number,
    length: number,
    fileOffset: number,
  ): Promise<void>;
}

/** Where a block's bytes (block-file format) sit in an arena. */
/** llama.cpp's evaluation timings (llama_perf_context): single-token decodes and batches. */
export interface EvalTimings {
  /** Decodes of a single token. */
  tokenEvalMs: number;
  /** Decodes of several tokens at once (prompt batches). */
  batchEvalMs: number;
}

export interface ArenaRange {
  arena: ArenaHandle;
  offset: number;
  length: number;
}

/** The addon API version this code speaks. */
const API_VERSION = 6;
/** LLAMA_STATE_SEQ_MAGIC ('ggsq') and LLAMA_STATE_SEQ_VERSION of the bundled llama.cpp. */
const SEQ_MAGIC = 0x67677371;
const SEQ_VERSION = 3;

/** node-llama-cpp internals this module touches (3.21.1). */
export interface SequenceInternals {
  _context: LlamaContext & {
    _ctx: unknown;
    _backendContextDisposeGuard: { createPreventDisposalHandle(): { dispose(): void } };
  };
  _lock: object;
  _sequenceId: number;
  _contextTokens: Token[];
  _nextTokenIndex: number;
  _loadedTokenPredictions: unknown[];
  _tokenPredictorOwner: object;
  _abortTokenPredictor(skipClearingPredictionsFromState?: boolean, skipLock?: boolean): Promise<void>;
}

/** Our addon's state API when the loaded llama.cpp build has it, else null (npm prebuilts). */
export function nativeStateApi(llama: Llama): NativeStateApi | null {
  const api = (llama as unknown as { _bindings?: { kvgraft?: NativeStateApi } })._bindings?.kvgraft;
  return api && api.apiVersion() === API_VERSION ? api : null;
}

/** Bytes before the state in a block file of `tokenCount` tokens. */
export function stateHeaderBytes(tokenCount: number): number {
  return 12 + 4 * tokenCount;
}

/** The token ids of a block file's header in an arena; a clear 422 when it is not one. */
export function readStateHeader(api: NativeStateApi, range: ArenaRange, maxTokens: number): Token[] {
  if (range.length < 12) throw unprocessable("block_invalid", "state shorter than its header");
  const head = api.copyOut(range.arena, range.offset, 12);
  if (head.readUInt32LE(0) !== SEQ_MAGIC || head.readUInt32LE(4) !== SEQ_VERSION)
    throw unprocessable("block_invalid", "not a llama.cpp sequence state (magic or version)");
  const count = head.readUInt32LE(8);
  if (count > maxTokens || stateHeaderBytes(count) > range.length)
    throw unprocessable("block_invalid", `token count ${count} does not fit the slot or the file`);
  const ids = api.copyOut(range.arena, range.offset + 12, 4 * count);
  return Array.from({ length: count }, (_, i) => ids.readUInt32LE(4 * i) as Token);
}

/**
 * Runs `work` holding the sequence's evaluation lock and its context's lock, as node-llama-cpp's
 * own state calls do, and a handle that holds off the context's disposal (node-llama-cpp's
 * dispose takes no lock: it waits for these handles, as its own decodes hold one; without it a
 * dispose could free the context under a native call).
 */
export async function withSequenceLocks<T>(sequence: SequenceInternals, work: () => Promise<T>): Promise<T> {
  const evaluatorLock = await acquireLock([sequence._lock, "evaluate"]);
  const contextLock = await acquireLock([sequence._context, "context"]);
  let inUse: { dispose(): void } | undefined;
  try {
    inUse = sequence._context._backendContextDisposeGuard.createPreventDisposalHandle();
    return await work();
  } finally {
    inUse?.dispose();
    contextLock.dispose();
    evaluatorLock.dispose();
  }
}

/**
 * Saves the sequence's state as block-file bytes into the arena range that `reserve(bytes)`
 * gives, and returns the filled range.
 */
export async function saveSequenceToMemory(
  api: NativeStateApi,
  sequence: LlamaContextSequence,
  reserve: (bytes: number) => { arena: ArenaHandle; offset: number },
): Promise<ArenaRange> {
  const seq = sequence as unknown as SequenceInternals;
  return withSequenceLocks(seq, async () => {
    const tokens = seq._contextTokens.slice(0, seq._nextTokenIndex);
    const header = stateHeaderBytes(tokens.length);
    const capacity = api.sequenceStateSize(seq._context._ctx, seq._sequenceId);
    const { arena, offset } = reserve(header + capacity);
    const written = await api.saveSequenceState(
      seq._context._ctx,
      seq._sequenceId,
      arena,
      offset + header,
      capacity,
    );
    // The header goes in after the save: the addon borrows its last 8 bytes for llama.cpp's frame.
    const head = Buffer.alloc(header);
    head.writeUInt32LE(SEQ_MAGIC, 0);
    head.writeUInt32LE(SEQ_VERSION, 4);
    head.writeUInt32LE(tokens.length, 8);
    for (let i = 0; i < tokens.length; i++) head.writeUInt32LE(tokens[i] as number, 12 + 4 * i);
    api.copyIn(arena, offset, head);
    return { arena, offset, length: header + written };
  });
}

/**
 * Loads block-file bytes from the arena into the sequence at the positions they were saved
 * from. On any error every cell of the sequence is removed (a failed load can leave partial
 * cells behind).
 */
export async function loadSequenceFromMemory(
  api: NativeStateApi,
  sequence: LlamaContextSequence,
  range: ArenaRange,
): Promise<void> {
  const seq = sequence as unknown as SequenceInternals;
  const tokens = readStateHeader(api, range, sequence.contextSize);
  const header = stateHeaderBytes(tokens.length);
  await withSequenceLocks(seq, async () => {
    seq._tokenPredictorOwner = {};
    await seq._abortTokenPredictor(true);
    seq._loadedTokenPredictions.length = 0;
    seq._contextTokens = [];
    seq._nextTokenIndex = 0;
    try {
      api.wipeSequence(seq._context._ctx, seq._sequenceId);
      await api.loadSequenceState(
        seq._context._ctx,
        seq._sequenceId,
        range.arena,
        range.offset + header,
        range.length - header,
      );
    } catch (err) {
      api.wipeSequence(seq._context._ctx, seq._sequenceId);
      throw err;
    }
    seq._contextTokens = tokens;
    seq._nextTokenIndex = tokens.length;
  });
}

/**
 * Copies a sequence's cells into another on the device (the hot tier's second copy). llama.cpp
 * performs the copy at the context's next update, before the next evaluation.
 */
export async function copySequence(
  api: NativeStateApi,
  source: LlamaContextSequence,
  target: LlamaContextSequence,
): Promise<void> {
  const src = source as unknown as SequenceInternals;
  const dst = target as unknown as SequenceInternals;
  await withSequenceLocks(dst, async () => {
    dst._tokenPredictorOwner = {};
    await dst._abortTokenPredictor(true);
    dst._loadedTokenPredictions.length = 0;
    api.copySequence(src._context._ctx, src._sequenceId, dst._sequenceId);
    dst._contextTokens = src._contextTokens.slice(0, src._nextTokenIndex);
    dst._nextTokenIndex = src._nextTokenIndex;
  });
}
