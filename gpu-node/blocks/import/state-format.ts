/**
 * The llama.cpp sequence-state file (the version node-llama-cpp 3.21.1 bundles), parsed by us so
 * that a crafted file is refused before llama.cpp reads it: llama.cpp trusts the counts in the
 * file (a cell count of 2^32-1 allocates until the OOM killer comes, a file one byte short aborts
 * the process, a cell at position INT32_MAX poisons the slot).
 *
 * Layout (little-endian): u32 magic 'ggsq', u32 version 3, u32 token count, i32 tokens; then per
 * KV cache (two for a sliding-window model: the full layers, then the windowed ones): u32 stream
 * count, and per stream u32 cell count; a non-empty stream has per cell {i32 pos, u32 n_seq_id,
 * i32 seq_id}, then u32 v_trans, u32 layer count, per layer {i32 K type, u64 K row bytes, rows},
 * and per layer the V rows (or, transposed, {i32 type, u32 element bytes, u32 width, elements}).
 * The project's patched build (gpu-node/engine/native/llama-patches/swa-exact-restore.diff) tags
 * the stream count with 0x4B47 ("KG") in its upper 16 bits and writes each non-empty stream's cell
 * geometry after its cell count: u32 stream size, u32 search head, u32 range count, ranges
 * {u32 from, u32 to}. Only the shape is checked here; the probe hash after the load checks the numbers.
 */
import { createHash } from "node:crypto";
import { type FileHandle, open } from "node:fs/promises";
import { unprocessable } from "../../errors.js";

const MAGIC = 0x67677371;
const VERSION = 3;
/** Bytes of one cell's metadata in a single-sequence state: pos, n_seq_id, seq_id. */
const CELL_META_BYTES = 12;
const GEOMETRY_TAG = 0x4b470000;
const GEOMETRY_MASK = 0xffff0000;
/** Largest stream (cells) a geometry may name: bounds what a crafted size can make anyone expect. */
const MAX_STREAM_CELLS = 2 ** 24;

/** One layer's K and V storage as this engine writes it. */
export interface LayerLayout {
  kType: number;
  kRowBytes: number;
  vType: number;
  /** Row bytes, or element bytes when V is transposed. */
  vBytes: number;
  /** Width of the transposed V (0 when V is not transposed). */
  vWidth: number;
}

/** One KV cache of the state (a sliding-window model has two). */
export interface CacheLayout {
  vTrans: boolean;
  layers: LayerLayout[];
}

/** The shape every state of this model and context has, whatever its length. */
export interface StateLayout {
  /** Streams per cache (one per slot unless the cache is unified). */
  streams: number;
  /** Whether streams carry their cell geometry (the patched build). */
  geometry: boolean;
  caches: CacheLayout[];
}

/** What a state must fit: the engine's model and context, and the block's manifest. */
export interface StateExpectation {
  layout: StateLayout;
  /** Cells a slot holds. */
  contextSize: number;
  /** Sliding window of the model; the last cache holds at most this many cells. Null: none. */
  slidingWindow: number | null;
  vocabSize: number;
  /** Sequence ids the context has. */
  sequences: number;
  tokenCount: number;
  tokensSha256: string;
}

/** A 422 `block_invalid` naming the field that is wrong. */
function invalid(field: string, message: string, details: Record<string, unknown> = {}) {
  return unprocessable("block_invalid", `state file: ${field}: ${message}`, { field, ...details });
}

/** Sequential reads over a file that never read past its end. */
class Reader {
  offset = 0;
  private buf = Buffer.alloc(0);
  private bufStart = 0;

  constructor(
    private readonly file: FileHandle,
    readonly size: number,
  ) {}

  /** Bytes [offset, offset+n) of the file; `n` must already be bounded by the caller. */
  async bytes(n: number, field: string): Promise<Buffer> {
    this.need(n, field);
    const start = this.offset - this.bufStart;
    if (start < 0 || start + n > this.buf.length) {
      this.buf = Buffer.alloc(Math.max(n, 64 * 1024));
      const { bytesRead } = await this.file.read(this.buf, 0, this.buf.length, this.offset);
      if (bytesRead < n) throw invalid(field, "the file changed while it was read");
      this.bufStart = this.offset;
    }
    const at = this.offset - this.bufStart;
    this.offset += n;
    return this.buf.subarray(at, at + n);
  }

  async u32(field: string): Promise<number> {
    return (await this.bytes(4, field)).readUInt32LE(0);
  }

  async i32(field: string): Promise<number> {
    return (await this.bytes(4, field)).readInt32LE(0);
  }

  async u64(field: string): Promise<number> {
    const v = (await this.bytes(8, field)).readBigUInt64LE(0);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid(field, `${v} is out of range`);
    return Number(v);
  }

  /** Skips `n` bytes of tensor data. */
  skip(n: number, field: string): void {
    this.need(n, field);
    this.offset += n;
  }

  private need(n: number, field: string): void {
    if (this.offset + n > this.size)
      throw invalid(field, `the file ends at byte ${this.size}, ${this.offset + n} needed`, {
        offset: this.offset,
      });
  }
}

/** Throws unless `got` equals `expected`. */
function expectEqual(field: string, got: number | boolean, expected: number | boolean): void {
  if (got !== expected) throw invalid(field, `expected ${expected}, got ${got}`, { expected, got });
}

/**
 * Reads the layout of a state this engine wrote itself (the reference it checks others
 * against). Throws `block_invalid` if the file is not a single-sequence state of a known shape.
 */
export async function readStateLayout(path: string): Promise<StateLayout> {
  return withReader(path, async (r) => {
    const tokenCount = await header(r);
    r.skip(tokenCount * 4, "tokens");
    const caches: CacheLayout[] = [];
    let streams = 0;
    let geometry = false;
    while (r.offset < r.size) {
      const at = caches.length;
      ({ streams, geometry } = await streamCount(r, `cache[${at}].streams`));
      if (streams < 1 || streams > 4096) throw invalid(`cache[${at}].streams`, `${streams} is out of range`);
      let layout: CacheLayout | null = null;
      for (let s = 0; s < streams; s++) {
        const cells = await r.u32(`cache[${at}].stream[${s}].cells`);
        if (cells === 0) continue;
        if (layout) throw invalid(`cache[${at}].stream[${s}].cells`, "a second stream holds cells");
        if (geometry) await cellGeometry(r, `cache[${at}]`, cells);
        r.skip(cells * CELL_META_BYTES, `cache[${at}].cellMeta`);
        layout = await cacheData(r, `cache[${at}]`, cells, null);
      }
      if (!layout) throw invalid(`cache[${at}]`, "the reference state holds no cells");
      caches.push(layout);
    }
    if (caches.length === 0) throw invalid("caches", "the state holds no KV cache");
    return { streams, geometry, caches };
  });
}

/**
 * Checks a state file against the engine's model and context and against the block's manifest;
 * throws a 422 `block_invalid` naming the first field that does not fit. Reads only the
 * headers, the tokens and the cells' metadata, so it is cheap beside the load itself. Returns the
 * state's token ids (for the checks of the manifest's other fields).
 */
export async function validateStateFile(path: string, expect: StateExpectation): Promise<number[]> {
  return withReader(path, async (r) => {
    const tokenCount = await header(r);
    expectEqual("tokenCount", tokenCount, expect.tokenCount);
    if (tokenCount < 1 || tokenCount >= expect.contextSize)
      throw invalid("tokenCount", `must be in [1, ${expect.contextSize - 1}], got ${tokenCount}`);
    const tokens = await r.bytes(tokenCount * 4, "tokens");
    const ids: number[] = [];
    for (let i = 0; i < tokenCount; i++) {
      const t = tokens.readInt32LE(i * 4);
      if (t < 0 || t >= expect.vocabSize)
        throw invalid(`tokens[${i}]`, `${t} is not in the vocabulary of ${expect.vocabSize}`);
      ids.push(t);
    }
    // Non-negative int32 tokens are the little-endian uint32 bytes sha256OfTokens hashes.
    const tokensSha256 = createHash("sha256").update(tokens).digest("hex");
    if (tokensSha256 !== expect.tokensSha256)
      throw invalid("tokens", "the token ids do not hash to the manifest's tokensSha256", {
        expected: expect.tokensSha256,
        got: tokensSha256,
      });
    const { caches } = expect.layout;
    for (let c = 0; c < caches.length; c++) {
      const name = `cache[${c}]`;
      const windowed = c === caches.length - 1 && caches.length > 1 && expect.slidingWindow !== null;
      const maxCells = windowed ? Math.min(tokenCount, expect.slidingWindow ?? tokenCount) : tokenCount;
      const count = await streamCount(r, `${name}.streams`);
      expectEqual(`${name}.geometry`, count.geometry, expect.layout.geometry);
      expectEqual(`${name}.streams`, count.streams, expect.layout.streams);
      let filled = 0;
      for (let s = 0; s < expect.layout.streams; s++) {
        const field = `${name}.stream[${s}].cells`;
        const cells = await r.u32(field);
        if (cells === 0) continue;
        if (++filled > 1) throw invalid(field, "a second stream holds cells of the sequence");
        // A full cache holds every position; a windowed one the window's tail.
        if (windowed ? cells > maxCells : cells !== tokenCount)
          throw invalid(field, `${cells} cells for ${tokenCount} tokens`, {
            expected: windowed ? `1..${maxCells}` : tokenCount,
            got: cells,
          });
        if (expect.layout.geometry) await cellGeometry(r, name, cells);
        await cellMeta(r, name, cells, tokenCount, expect.sequences);
        await cacheData(r, name, cells, caches[c] as CacheLayout);
      }
      if (filled === 0) throw invalid(`${name}.cells`, "no stream holds the sequence's cells");
    }
    if (r.offset !== r.size)
      throw invalid("end", `${r.size - r.offset} bytes follow the last cache`, { offset: r.offset });
    return ids;
  });
}

async function withReader<T>(path: string, read: (r: Reader) => Promise<T>): Promise<T> {
  const file = await open(path, "r");
  try {
    return await read(new Reader(file, (await file.stat()).size));
  } finally {
    await file.close();
  }
}

/** A cache's stream count, and whether it carries the patched build's geometry tag. */
async function streamCount(r: Reader, field: string): Promise<{ streams: number; geometry: boolean }> {
  const raw = await r.u32(field);
  const upper = (raw & GEOMETRY_MASK) >>> 0;
  // Upper bits are either clear (stock llama.cpp) or our tag; anything else is no stream count.
  if (upper !== 0 && upper !== GEOMETRY_TAG) throw invalid(field, `${raw >>> 0} is not a stream count`);
  const geometry = upper === GEOMETRY_TAG;
  return { streams: geometry ? raw & ~GEOMETRY_MASK : raw, geometry };
}

/**
 * A stream's cell geometry (the patched build): the saved stream's size and head, and ascending,
 * disjoint, non-empty cell ranges inside it that hold exactly the stream's cells.
 */
async function cellGeometry(r: Reader, name: string, cells: number): Promise<void> {
  const size = await r.u32(`${name}.geometry.size`);
  if (size < cells || size > MAX_STREAM_CELLS)
    throw invalid(`${name}.geometry.size`, `${size} cannot hold ${cells} cells`);
  const head = await r.u32(`${name}.geometry.head`);
  if (head > size) throw invalid(`${name}.geometry.head`, `${head} is past the stream's ${size} cells`);
  const n = await r.u32(`${name}.geometry.ranges`);
  if (n < 1 || n > cells) throw invalid(`${name}.geometry.ranges`, `${n} ranges for ${cells} cells`);
  const ranges = await r.bytes(n * 8, `${name}.geometry.ranges`);
  let total = 0;
  let end = 0;
  for (let i = 0; i < n; i++) {
    const from = ranges.readUInt32LE(i * 8);
    const to = ranges.readUInt32LE(i * 8 + 4);
    if (from < end || to <= from || to > size)
      throw invalid(
        `${name}.geometry.range[${i}]`,
        `[${from}, ${to}) is not an ascending range inside ${size} cells`,
      );
    total += to - from;
    end = to;
  }
  if (total !== cells)
    throw invalid(`${name}.geometry.ranges`, `the ranges hold ${total} cells, the stream ${cells}`);
}

/** Magic and version; returns the token count. */
async function header(r: Reader): Promise<number> {
  const magic = await r.u32("magic");
  if (magic !== MAGIC) throw invalid("magic", `0x${magic.toString(16)} is not a sequence state`);
  expectEqual("version", await r.u32("version"), VERSION);
  const tokenCount = await r.u32("tokenCount");
  if (tokenCount * 4 > r.size - r.offset)
    throw invalid("tokenCount", `${tokenCount} tokens do not fit in the file`);
  return tokenCount;
}

/**
 * The cells' positions must be exactly the last `cells` positions of the block, each once (in
 * any cell order), each for one sequence id of this context: no stray position survives a load.
 */
async function cellMeta(r: Reader, name: string, cells: number, tokenCount: number, sequences: number) {
  const meta = await r.bytes(cells * CELL_META_BYTES, `${name}.cellMeta`);
  const first = tokenCount - cells;
  const seen = new Uint8Array(cells);
  for (let i = 0; i < cells; i++) {
    const at = i * CELL_META_BYTES;
    const pos = meta.readInt32LE(at);
    if (pos < first || pos >= tokenCount || seen[pos - first])
      throw invalid(
        `${name}.cell[${i}].pos`,
        `${pos} is not one of the positions ${first}..${tokenCount - 1}`,
      );
    seen[pos - first] = 1;
    expectEqual(`${name}.cell[${i}].seqIdCount`, meta.readUInt32LE(at + 4), 1);
    const seq = meta.readInt32LE(at + 8);
    if (seq < 0 || seq >= sequences)
      throw invalid(`${name}.cell[${i}].seqId`, `${seq} is not in [0, ${sequences})`);
  }
}

/**
 * The K and V sections of one stream. With `expected` every type and size must match it before
 * its data is skipped; without, the layout is read (and still bounded by the file's size).
 */
async function cacheData(
  r: Reader,
  name: string,
  cells: number,
  expected: CacheLayout | null,
): Promise<CacheLayout> {
  const vTrans = await r.u32(`${name}.vTrans`);
  if (vTrans > 1) throw invalid(`${name}.vTrans`, `${vTrans} is not 0 or 1`);
  const layerCount = await r.u32(`${name}.layers`);
  if (expected) {
    expectEqual(`${name}.vTrans`, vTrans === 1, expected.vTrans);
    expectEqual(`${name}.layers`, layerCount, expected.layers.length);
  } else if (layerCount < 1 || layerCount > 4096)
    throw invalid(`${name}.layers`, `${layerCount} is out of range`);
  const layers: LayerLayout[] = Array.from({ length: layerCount }, () => ({
    kType: 0,
    kRowBytes: 0,
    vType: 0,
    vBytes: 0,
    vWidth: 0,
  }));
  for (let l = 0; l < layerCount; l++) {
    const field = `${name}.layer[${l}]`;
    const layer = layers[l] as LayerLayout;
    layer.kType = await r.i32(`${field}.kType`);
    layer.kRowBytes = await r.u64(`${field}.kRowBytes`);
    const want = expected?.layers[l];
    if (want) {
      expectEqual(`${field}.kType`, layer.kType, want.kType);
      expectEqual(`${field}.kRowBytes`, layer.kRowBytes, want.kRowBytes);
    }
    r.skip(cells * layer.kRowBytes, `${field}.k`);
  }
  for (let l = 0; l < layerCount; l++) {
    const field = `${name}.layer[${l}]`;
    const layer = layers[l] as LayerLayout;
    const want = expected?.layers[l];
    layer.vType = await r.i32(`${field}.vType`);
    if (want) expectEqual(`${field}.vType`, layer.vType, want.vType);
    if (vTrans === 0) {
      layer.vBytes = await r.u64(`${field}.vRowBytes`);
      if (want) expectEqual(`${field}.vRowBytes`, layer.vBytes, want.vBytes);
      r.skip(cells * layer.vBytes, `${field}.v`);
    } else {
      layer.vBytes = await r.u32(`${field}.vElementBytes`);
      layer.vWidth = await r.u32(`${field}.vWidth`);
      if (want) {
        expectEqual(`${field}.vElementBytes`, layer.vBytes, want.vBytes);
        expectEqual(`${field}.vWidth`, layer.vWidth, want.vWidth);
      }
      r.skip(cells * layer.vBytes * layer.vWidth, `${field}.v`);
    }
  }
  return { vTrans: vTrans === 1, layers };
}
