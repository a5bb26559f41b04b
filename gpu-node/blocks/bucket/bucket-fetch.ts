/**
 * Fetching a block's state from the bucket with several ranged GETs at once. The state is cut
 * into pieces (at most 8 MiB, never across a chunk) handed out to the connections (`planPieces`:
 * in offset order when the destination hashes the whole state as its gap-free prefix grows, else
 * each chunk's in turn); the destination hashes what is stored as it grows: each chunk's SHA-256
 * (checked against the manifest) and, when asked for, the whole file's (which binds the
 * manifest's chunk hashes to the block's name). The hashing runs off the thread that receives the
 * bytes and keeps pace with them, so little of it is left when the last byte arrives. The first
 * piece that fails (or chunk that differs) stops the rest.
 *
 * Two destinations: a temp file hashed by worker threads reading it back (`fileDestination`;
 * not fsynced here, the block store does when it commits it), and on the engine build the warm
 * arena, hashed in place by the addon (`MemoryPath.stageFetch`).
 */

import type { BlockManifest } from "../../../shared/protocol.js";
import { conflict } from "../../errors.js";
import type { BulkResponse } from "./http/http-connection.js";

/** Chunk size when a manifest has no chunk hashes (blocks from before they existed). */
const DEFAULT_CHUNK_BYTES = 64 * 2 ** 20;
/** Largest piece one GET asks for: small enough that each chunk's gap-free prefix grows evenly. */
const PIECE_BYTES = 8 * 2 ** 20;
/** The hashing moves on once a chunk's gap-free prefix grew by this much (or reached its end). */
const ADVANCE_BYTES = 2 * 2 ** 20;
/**
 * Ranged GETs in flight when the configuration names no number: on the H200 (s3rver on loopback,
 * a 313 MiB block, tagged manifests) 4 served it at 0.80-1.12x of the local cold restore and 8 at
 * 0.85-1.08x over three rounds (docs/deploy-r2.md, rounds D1-D3).
 */
export const DEFAULT_FETCH_PARALLEL = 4;

/** The layout of the state being fetched. */
export interface FetchGeometry {
  sizeBytes: number;
  chunkBytes: number;
  /** Chunks whose SHA-256 the destination computes (0 when the manifest lists none). */
  chunks: number;
  /** Whether the whole state's SHA-256 is needed now (a destination may compute it anyway). */
  whole: boolean;
}

/** Where a fetch puts the bytes; it hashes the written prefix as it grows. */
export interface FetchDestination {
  /**
   * Whether it hashes the whole state as the gap-free prefix grows (asked to, or anyway): then
   * the pieces come in offset order, else each chunk's in turn (`planPieces`).
   */
  readonly followsPrefix: boolean;
  /**
   * Stores `bytes` (a received slab, up to 1 MiB, reused once the promise settled) at `offset`;
   * several run at once, each one's bytes reported stored after the earlier ones'.
   */
  write(offset: number, bytes: Buffer): Promise<void>;
  /**
   * Chunk `chunk`'s bytes from its start to `chunkEnd` are stored, and every byte before
   * `prefixEnd`: hash on up to them (each only grows; a chunk reported whole is not reported again).
   */
  advance(chunk: number, chunkEnd: number, prefixEnd: number): void;
  /**
   * Once advanced to the end: the whole state's SHA-256, or null when it was not asked for and not
   * computed (each chunk's went to `onChunk` on the way).
   */
  digest(): Promise<string | null>;
  /** Stops the hashing (cut short when the fetch failed) and releases what it holds. */
  close(): Promise<void>;
}

/** Opens a destination; it reports each chunk's SHA-256 to `onChunk` as soon as it has it. */
export type OpenDestination = (
  geometry: FetchGeometry,
  onChunk: (index: number, sha256: string) => void,
) => Promise<FetchDestination>;

/** When a fetch's stages ended, in ms from its first GET: for benchmarks (`bench bucket`). */
export interface FetchTimings {
  /** The first body bytes stored. */
  firstBytesMs: number;
  /** Every byte stored. */
  allBytesMs: number;
  /** Every hash computed and checked. */
  hashedMs: number;
}

/** A signed GET of the block's state object for `bytes=start-end` (inclusive). */
export type RangedGet = (start: number, end: number, signal: AbortSignal) => Promise<BulkResponse>;

/** How a failed range is reported: a network or server fault versus damaged bytes. */
export interface FetchFaults {
  down(what: string, cause: unknown): Error;
  corrupt(why: string): Error;
}

/** Builds the 409 `bucket_block_corrupt` error of a block. */
export function corruptBlock(sha: string): (why: string) => Error {
  return (why) =>
    conflict("bucket_block_corrupt", `block ${sha} in the bucket is damaged: ${why}`, { sha256: sha });
}

/**
 * Downloads the state of `manifest` into the destination `openDestination` makes, with
 * `parallel` ranged GETs. Resolves (with its stages' timings) once every chunk's SHA-256 matched
 * the manifest, the total length matched and the whole state hashed to the block's name (unless
 * `chunksTrusted` and the destination left that to the caller: `wholeChecked` false); otherwise
 * throws (the caller discards what the destination holds).
 */
export async function fetchRanges(
  get: RangedGet,
  manifest: BlockManifest,
  openDestination: OpenDestination,
  options: { parallel: number; faults: FetchFaults; chunksTrusted?: boolean },
): Promise<FetchTimings & { wholeChecked: boolean }> {
  const { faults } = options;
  const began = performance.now();
  let firstBytesMs = -1;
  const size = manifest.sizeBytes;
  const chunkBytes = manifest.chunks?.bytes ?? DEFAULT_CHUNK_BYTES;
  const chunkCount = Math.max(1, Math.ceil(size / chunkBytes));
  if (manifest.chunks && manifest.chunks.sha256.length !== chunkCount)
    throw faults.corrupt("its manifest's chunk list does not match its size");
  const whole = !(options.chunksTrusted && manifest.chunks);
  const abort = new AbortController();
  let failure: unknown = null;
  const fail = (err: unknown) => {
    if (failure === null) failure = err;
    abort.abort();
  };
  const dest = await openDestination(
    { sizeBytes: size, chunkBytes, chunks: manifest.chunks ? chunkCount : 0, whole },
    (index, digest) => {
      if (digest !== manifest.chunks?.sha256[index]) fail(faults.corrupt(`chunk ${index} differs`));
    },
  );
  const plan = planPieces(size, chunkBytes, chunkCount, !dest.followsPrefix);
  const progress = new ChunkProgress(plan, size, chunkBytes, (chunk, chunkEnd, prefixEnd) =>
    dest.advance(chunk, chunkEnd, prefixEnd),
  );
  let next = 0;
  const connection = async (): Promise<void> => {
    for (;;) {
      const piece = plan.order[next++];
      if (failure !== null || !piece) return;
      try {
        await fetchPiece(get, piece, size, dest, faults, abort.signal, (bytes) => {
          if (firstBytesMs < 0) firstBytesMs = performance.now() - began;
          progress.stored(piece, bytes);
        });
      } catch (err) {
        fail(err);
      }
    }
  };
  try {
    const connections = Math.max(1, Math.min(options.parallel, plan.order.length));
    await Promise.all(Array.from({ length: connections }, connection));
    if (failure !== null) throw failure;
    const allBytesMs = performance.now() - began;
    const digest = await dest.digest();
    // The last chunks' digests arrive behind the downloads.
    if (failure !== null) throw failure;
    if (digest !== null && digest !== manifest.sha256) throw faults.corrupt("the file's SHA-256 differs");
    return { firstBytesMs, allBytesMs, hashedMs: performance.now() - began, wholeChecked: digest !== null };
  } finally {
    await dest.close();
  }
}

/** One ranged GET's part of the state: never across a chunk's end. */
interface Piece {
  /** Its place in offset order. */
  index: number;
  chunk: number;
  start: number;
  length: number;
}

/** Each chunk's pieces (in offset order), and every piece in the order to fetch them. */
interface PiecePlan {
  byChunk: Piece[][];
  order: Piece[];
}

/**
 * Cuts the state into pieces of at most `PIECE_BYTES` inside chunks. In offset order when the
 * whole state's SHA-256 is computed as it comes (one stream that follows the gap-free prefix), else
 * `interleaved`: the chunks' pieces in turn (first of each, then second of each...), so every
 * chunk fills front to back at a fraction of the rate its own hash runs at, all at once, and each
 * chunk's hash ends a piece after its last byte. In offset order, the GETs in flight all fall in
 * one chunk, whose hash can only follow the earliest one; at the end that left 16-60 ms of the
 * last chunk to hash after the last byte on the H200's host.
 */
function planPieces(size: number, chunkBytes: number, chunkCount: number, interleaved: boolean): PiecePlan {
  const byChunk: Piece[][] = [];
  let index = 0;
  for (let chunk = 0; chunk < chunkCount; chunk++) {
    const own: Piece[] = [];
    const end = Math.min(size, (chunk + 1) * chunkBytes);
    for (let start = chunk * chunkBytes; start < end; start += PIECE_BYTES)
      own.push({ index: index++, chunk, start, length: Math.min(PIECE_BYTES, end - start) });
    byChunk.push(own);
  }
  if (!interleaved) return { byChunk, order: byChunk.flat() };
  const order: Piece[] = [];
  const rounds = Math.max(...byChunk.map((own) => own.length));
  for (let round = 0; round < rounds; round++)
    for (const own of byChunk) {
      const piece = own[round];
      if (piece) order.push(piece);
    }
  return { byChunk, order };
}

/**
 * Tracks each chunk's gap-free prefix and the whole state's as pieces are stored, and reports
 * them (`advance`) once a chunk's grew by `ADVANCE_BYTES` or reached its end.
 */
class ChunkProgress {
  /** Per piece (by index): its bytes stored, from its start. */
  private readonly bytes: number[];
  /** Per chunk: its first piece not wholly stored (an index into its `byChunk` list). */
  private readonly cursor: number[];
  /** Per chunk: the end of its prefix last reported. */
  private readonly reported: number[];
  /** The first chunk not wholly stored. */
  private prefixChunk = 0;

  constructor(
    private readonly plan: PiecePlan,
    private readonly size: number,
    private readonly chunkBytes: number,
    private readonly advance: (chunk: number, chunkEnd: number, prefixEnd: number) => void,
  ) {
    this.bytes = new Array<number>(plan.order.length).fill(0);
    this.cursor = new Array<number>(plan.byChunk.length).fill(0);
    this.reported = plan.byChunk.map((_, chunk) => chunk * chunkBytes);
  }

  /** `bytes` of `piece`, from its start, are stored. */
  stored(piece: Piece, bytes: number): void {
    this.bytes[piece.index] = bytes;
    const { byChunk } = this.plan;
    const c = piece.chunk;
    const own = byChunk[c] ?? [];
    const whole = (p: Piece | undefined) => p !== undefined && this.bytes[p.index] === p.length;
    let at = this.cursor[c] ?? 0;
    while (whole(own[at])) at++;
    this.cursor[c] = at;
    const current = own[at];
    const chunkEnd = current
      ? current.start + (this.bytes[current.index] ?? 0)
      : Math.min(this.size, (c + 1) * this.chunkBytes);
    if (current && chunkEnd - (this.reported[c] ?? 0) < ADVANCE_BYTES) return;
    this.reported[c] = chunkEnd;
    while (
      this.prefixChunk < byChunk.length &&
      this.cursor[this.prefixChunk] === byChunk[this.prefixChunk]?.length
    )
      this.prefixChunk++;
    const prefixEnd =
      this.prefixChunk === byChunk.length ? this.size : (this.reported[this.prefixChunk] ?? 0);
    this.advance(c, chunkEnd, prefixEnd);
  }
}

/** One ranged GET: streamed into the destination; `onStored` gets the piece's bytes stored so far. */
async function fetchPiece(
  get: RangedGet,
  { index, start, length }: Piece,
  sizeBytes: number,
  dest: FetchDestination,
  faults: FetchFaults,
  signal: AbortSignal,
  onStored: (bytes: number) => void,
): Promise<void> {
  let res: BulkResponse;
  try {
    res = await get(start, start + length - 1, signal);
  } catch (err) {
    throw faults.down("GET state range", err);
  }
  if (res.status === 404 || res.status === 416) {
    res.discard();
    throw res.status === 404
      ? faults.corrupt("the manifest is there but the state object is not")
      : faults.corrupt(`shorter than the ${sizeBytes} bytes its manifest says`);
  }
  // A 200 (the whole object) is a valid answer only when the range is the whole object.
  if (res.status !== 206 && !(res.status === 200 && length === sizeBytes)) {
    res.discard();
    throw faults.down("GET state range", `status ${res.status}`);
  }
  // The object's total length, from Content-Range: a longer or shorter object is refused at once.
  const total = res.status === 206 ? Number(/\/(\d+)$/.exec(res.header("content-range") ?? "")?.[1]) : NaN;
  const objectBytes = res.status === 206 ? total : res.bodyBytes;
  if (objectBytes !== sizeBytes) {
    res.discard();
    throw faults.corrupt(`the state object is ${objectBytes} bytes, its manifest says ${sizeBytes}`);
  }
  if (res.bodyBytes !== length) {
    res.discard();
    throw faults.corrupt(`range ${index} is ${res.bodyBytes} bytes, ${length} were asked for`);
  }
  let received = 0;
  // A write's failure: reported as it is, not as a network fault.
  let refusal: unknown = null;
  // Each write's bytes are reported stored after the earlier ones'.
  let inOrder: Promise<void> = Promise.resolve();
  try {
    await res.consume((bytes) => {
      const at = start + received;
      received += bytes.length;
      const end = received;
      const storing = dest.write(at, bytes);
      inOrder = inOrder.then(() => storing).then(() => onStored(end));
      inOrder.catch(() => undefined); // seen below
      return storing.catch((err: unknown) => {
        refusal ??= err;
        throw err;
      });
    });
  } catch (err) {
    throw refusal ?? faults.down("GET state body", err);
  } finally {
    // Never return with a write still using room the caller may free after a failure.
    await inOrder.catch(() => undefined);
  }
}
