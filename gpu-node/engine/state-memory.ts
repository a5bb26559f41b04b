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
import { unprocessable } from "../../shared/errors.js";

/** The API our addon patch adds (KvgraftState.cpp); absent from the npm prebuilt binaries. */
export interface NativeStateApi {
  apiVersion(): number;
  allocPinnedBuffer(size: number): Buffer | null;
  sequenceStateSize(context: unknown, sequenceId: number): number;
  saveSequenceState(
    context: unknown,
    sequenceId: number,
    buffer: Buffer,
    offset: number,
    capacity: number,
  ): Promise<number>;
  loadSequenceState(
    context: unknown,
    sequenceId: number,
    buffer: Buffer,
    offset: number,
    size: number,
  ): Promise<number>;
  copySequence(context: unknown, source: number, target: number): void;
  wipeSequence(context: unknown, sequenceId: number): boolean;
  /**
   * Reads `readLength` bytes of the file at `fileOffset` into `buffer[offset...]` (fd -1: no read)
   * and resolves to the SHA-256 of `buffer[offset, offset + length)`; runs on the thread pool.
   */
  readChunk(
    fd: number,
    buffer: Buffer,
    offset: number,
    length: number,
    fileOffset: number,
    readLength: number,
  ): Promise<string>;
}

/** The addon API version this code speaks. */
const API_VERSION = 1;
/** LLAMA_STATE_SEQ_MAGIC ('ggsq') and LLAMA_STATE_SEQ_VERSION of the bundled llama.cpp. */
const SEQ_MAGIC = 0x67677371;
const SEQ_VERSION = 3;

/** node-llama-cpp internals this module touches (3.21.1). */
interface SequenceInternals {
  _context: LlamaContext & { _ctx: unknown };
  _lock: object;
  _sequenceId: number;
  _contextTokens: Token[];
  _nextTokenIndex: number;
  _loadedTokenPredictions: unknown[];
  _tokenPredictorOwner: object;
  _abortTokenPredictor(skipClearingPredictionsFromState?: boolean): Promise<void>;
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

/** The token ids of a block file's header; a clear 422 when the header is not one. */
export function readStateHeader(bytes: Buffer, maxTokens: number): Token[] {
  if (bytes.length < 12) throw unprocessable("block_invalid", "state shorter than its header");
  if (bytes.readUInt32LE(0) !== SEQ_MAGIC || bytes.readUInt32LE(4) !== SEQ_VERSION)
    throw unprocessable("block_invalid", "not a llama.cpp sequence state (magic or version)");
  const count = bytes.readUInt32LE(8);
  if (count > maxTokens || stateHeaderBytes(count) > bytes.length)
    throw unprocessable("block_invalid", `token count ${count} does not fit the slot or the file`);
  const tokens = new Array<Token>(count);
  for (let i = 0; i < count; i++) tokens[i] = bytes.readUInt32LE(12 + 4 * i) as Token;
  return tokens;
}

/** Runs `work` holding the sequence's evaluation lock and its context's lock, as node-llama-cpp's own state calls do. */
async function withSequenceLocks<T>(sequence: SequenceInternals, work: () => Promise<T>): Promise<T> {
  const evaluatorLock = await acquireLock([sequence._lock, "evaluate"]);
  const contextLock = await acquireLock([sequence._context, "context"]);
  try {
    return await work();
  } finally {
    contextLock.dispose();
    evaluatorLock.dispose();
  }
}

/**
 * Saves the sequence's state as block-file bytes into memory from `allocate(bytes)` (pinned
 * memory on a GPU) and returns the filled view.
 */
export async function saveSequenceToMemory(
  api: NativeStateApi,
  sequence: LlamaContextSequence,
  allocate: (bytes: number) => Buffer,
): Promise<Buffer> {
  const seq = sequence as unknown as SequenceInternals;
  return withSequenceLocks(seq, async () => {
    const tokens = seq._contextTokens.slice(0, seq._nextTokenIndex);
    const header = stateHeaderBytes(tokens.length);
    const capacity = api.sequenceStateSize(seq._context._ctx, seq._sequenceId);
    const buffer = allocate(header + capacity);
    const written = await api.saveSequenceState(seq._context._ctx, seq._sequenceId, buffer, header, capacity);
    // The header goes in after the save: the addon borrows its last 8 bytes for llama.cpp's frame.
    buffer.writeUInt32LE(SEQ_MAGIC, 0);
    buffer.writeUInt32LE(SEQ_VERSION, 4);
    buffer.writeUInt32LE(tokens.length, 8);
    for (let i = 0; i < tokens.length; i++) buffer.writeUInt32LE(tokens[i] as number, 12 + 4 * i);
    return buffer.subarray(0, header + written);
  });
}

/**
 * Loads block-file bytes into the sequence at the positions they were saved from. On any error
 * every cell of the sequence is removed (a failed load can leave partial cells behind).
 */
export async function loadSequenceFromMemory(
  api: NativeStateApi,
  sequence: LlamaContextSequence,
  bytes: Buffer,
): Promise<void> {
  const seq = sequence as unknown as SequenceInternals;
  const tokens = readStateHeader(bytes, sequence.contextSize);
  const header = stateHeaderBytes(tokens.length);
  await withSequenceLocks(seq, async () => {
    seq._tokenPredictorOwner = {};
    await seq._abortTokenPredictor(true);
    seq._loadedTokenPredictions.length = 0;
    seq._contextTokens = [];
    seq._nextTokenIndex = 0;
    try {
      api.wipeSequence(seq._context._ctx, seq._sequenceId);
      await api.loadSequenceState(seq._context._ctx, seq._sequenceId, bytes, header, bytes.length - header);
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
