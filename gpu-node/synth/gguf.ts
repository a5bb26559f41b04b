/** Minimal GGUF v3 writer: metadata, tensor infos and tensor data streamed to a file descriptor. */
import { writeSync } from "node:fs";

export const GGUF_ALIGNMENT = 32;

/** GGUF metadata value types. */
enum ValueType {
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
}

/** ggml tensor types that the generator writes. */
export enum TensorType {
  F32 = 0,
  F16 = 1,
  Q8_0 = 8,
}

/** A metadata value with an explicit GGUF type (plain JS numbers are ambiguous). */
export type MetaValue =
  | { type: "u32"; value: number }
  | { type: "i32"; value: number }
  | { type: "f32"; value: number }
  | { type: "bool"; value: boolean }
  | { type: "str"; value: string }
  | { type: "str[]"; value: string[] }
  | { type: "f32[]"; value: Float32Array }
  | { type: "i32[]"; value: Int32Array };

/** A tensor's description; `dims` are in ggml order (innermost first). */
export interface TensorSpec {
  name: string;
  dims: number[];
  type: TensorType;
}

/** Bytes a tensor occupies in the file. */
export function tensorBytes(t: TensorSpec): number {
  const n = t.dims.reduce((a, b) => a * b, 1);
  if (t.type === TensorType.F32) return n * 4;
  if (t.type === TensorType.F16) return n * 2;
  if (n % 32 !== 0) throw new Error(`${t.name}: q8_0 needs a multiple of 32 elements`);
  return (n / 32) * 34;
}

const align = (n: number) => Math.ceil(n / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;

/** Growable little-endian byte builder for the header. */
class ByteBuilder {
  private buf = Buffer.alloc(1 << 16);
  length = 0;
  private ensure(n: number) {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  /** Appends `size` bytes written by `write` at the current end. */
  private put(size: number, write: (buf: Buffer, offset: number) => void) {
    this.ensure(size);
    write(this.buf, this.length);
    this.length += size;
  }
  u32(v: number) {
    this.put(4, (b, o) => b.writeUInt32LE(v, o));
  }
  i32(v: number) {
    this.put(4, (b, o) => b.writeInt32LE(v, o));
  }
  u64(v: number) {
    this.put(8, (b, o) => b.writeBigUInt64LE(BigInt(v), o));
  }
  f32(v: number) {
    this.put(4, (b, o) => b.writeFloatLE(v, o));
  }
  u8(v: number) {
    this.put(1, (b, o) => b.writeUInt8(v, o));
  }
  str(s: string) {
    const bytes = Buffer.from(s, "utf8");
    this.u64(bytes.length);
    this.put(bytes.length, (b, o) => bytes.copy(b, o));
  }
  pad() {
    const target = align(this.length);
    this.ensure(target - this.length);
    this.buf.fill(0, this.length, target);
    this.length = target;
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function writeMeta(b: ByteBuilder, key: string, v: MetaValue) {
  b.str(key);
  switch (v.type) {
    case "u32":
      b.u32(ValueType.UINT32);
      b.u32(v.value);
      break;
    case "i32":
      b.u32(ValueType.INT32);
      b.i32(v.value);
      break;
    case "f32":
      b.u32(ValueType.FLOAT32);
      b.f32(v.value);
      break;
    case "bool":
      b.u32(ValueType.BOOL);
      b.u8(v.value ? 1 : 0);
      break;
    case "str":
      b.u32(ValueType.STRING);
      b.str(v.value);
      break;
    case "str[]":
      writeArray(b, ValueType.STRING, v.value, (s) => b.str(s));
      break;
    case "f32[]":
      writeArray(b, ValueType.FLOAT32, v.value, (x) => b.f32(x));
      break;
    case "i32[]":
      writeArray(b, ValueType.INT32, v.value, (x) => b.i32(x));
      break;
  }
}

/** A metadata array: its element type, its length, then each element. */
function writeArray<T>(
  b: ByteBuilder,
  elementType: ValueType,
  values: ArrayLike<T> & Iterable<T>,
  write: (v: T) => void,
) {
  b.u32(ValueType.ARRAY);
  b.u32(elementType);
  b.u64(values.length);
  for (const v of values) write(v);
}

/**
 * Writes the GGUF header (magic, version 3, metadata, tensor infos, padding) to `fd` and
 * returns the byte size of the header; tensor data follows in `tensors` order, each padded
 * to GGUF_ALIGNMENT.
 */
export function writeGgufHeader(fd: number, meta: Record<string, MetaValue>, tensors: TensorSpec[]): number {
  const b = new ByteBuilder();
  b.u32(0x46554747); // "GGUF"
  b.u32(3);
  b.u64(tensors.length);
  b.u64(Object.keys(meta).length);
  for (const [key, value] of Object.entries(meta)) writeMeta(b, key, value);
  let offset = 0;
  for (const t of tensors) {
    b.str(t.name);
    b.u32(t.dims.length);
    for (const d of t.dims) b.u64(d);
    b.u32(t.type);
    b.u64(offset);
    offset = align(offset + tensorBytes(t));
  }
  b.pad();
  const bytes = b.bytes();
  writeSync(fd, bytes);
  return bytes.length;
}

/** Total file size for a header of `headerBytes` and these tensors. */
export function ggufDataBytes(tensors: TensorSpec[]): number {
  return tensors.reduce((sum, t) => sum + align(tensorBytes(t)), 0);
}

/** Zero bytes that pad a tensor of `bytes` to the alignment. */
export function paddingAfter(bytes: number): number {
  return align(bytes) - bytes;
}
