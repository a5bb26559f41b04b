/**
 * The header fields of a llama.cpp sequence-state file with their offsets, found by a walker
 * written separately from the product's validator, so tests can aim mutations at each field.
 */

export interface StateField {
  name: string;
  offset: number;
  bytes: 4 | 8;
}

/** Every header field of a single-sequence state (tokens and cell metadata included). */
export function stateFields(buf: Buffer): StateField[] {
  const fields: StateField[] = [];
  let o = 0;
  const field = (name: string, bytes: 4 | 8 = 4): number => {
    fields.push({ name, offset: o, bytes });
    const v = bytes === 4 ? buf.readUInt32LE(o) : Number(buf.readBigUInt64LE(o));
    o += bytes;
    return v;
  };
  field("magic");
  field("version");
  const tokens = field("tokenCount");
  for (let i = 0; i < tokens; i++) field(`token[${i}]`);
  for (let c = 0; o < buf.length; c++) {
    const raw = field(`cache[${c}].streams`);
    // The patched build tags the count (0x4B47 in the upper bits) and adds each stream's geometry.
    const tagged = (raw & 0xffff0000) >>> 0 === GEOMETRY_TAG;
    const streams = tagged ? raw & 0xffff : raw;
    for (let s = 0; s < streams; s++) {
      const cells = field(`cache[${c}].stream[${s}].cells`);
      if (cells === 0) continue;
      if (tagged) {
        field(`cache[${c}].stream[${s}].geometry.size`);
        field(`cache[${c}].stream[${s}].geometry.head`);
        const ranges = field(`cache[${c}].stream[${s}].geometry.ranges`);
        for (let r = 0; r < ranges; r++) {
          field(`cache[${c}].stream[${s}].geometry.range[${r}].from`);
          field(`cache[${c}].stream[${s}].geometry.range[${r}].to`);
        }
      }
      for (let i = 0; i < cells; i++) {
        field(`cache[${c}].cell[${i}].pos`);
        field(`cache[${c}].cell[${i}].seqIdCount`);
        field(`cache[${c}].cell[${i}].seqId`);
      }
      field(`cache[${c}].vTrans`);
      const layers = field(`cache[${c}].layers`);
      for (const kv of ["k", "v"])
        for (let l = 0; l < layers; l++) {
          field(`cache[${c}].layer[${l}].${kv}Type`);
          const row = field(`cache[${c}].layer[${l}].${kv}RowBytes`, 8);
          o += row * cells;
        }
    }
  }
  if (o !== buf.length) throw new Error(`walked to ${o} of ${buf.length} bytes`);
  return fields;
}

/** The patched build's tag in a stream count's upper 16 bits ("KG"). */
const GEOMETRY_TAG = 0x4b470000;

/** Whether the state was written by the patched build (its first stream count carries the tag). */
export function isTagged(buf: Buffer): boolean {
  const streams = stateFields(buf).find((f) => /^cache\[\d+\]\.streams$/.test(f.name));
  return streams !== undefined && (buf.readUInt32LE(streams.offset) & 0xffff0000) >>> 0 === GEOMETRY_TAG;
}

/** The offset of the named field; throws when the state has none. */
export function fieldOffset(buf: Buffer, name: string): number {
  const f = stateFields(buf).find((x) => x.name === name);
  if (!f) throw new Error(`no field ${name}`);
  return f.offset;
}

/**
 * The state as the project's patched llama.cpp build writes it (swa-exact-restore.diff): stream
 * counts tagged 0x4B47 in their upper bits, and after each non-empty stream's cell count its
 * geometry: stream size, search head, one range [0, cells).
 */
export function withGeometry(buf: Buffer, streamSize: number): Buffer {
  if (isTagged(buf)) return buf; // made by the patched build already
  const parts: Buffer[] = [];
  let at = 0;
  for (const f of stateFields(buf)) {
    if (/^cache\[\d+\]\.streams$/.test(f.name)) {
      parts.push(buf.subarray(at, f.offset));
      const tagged = Buffer.alloc(4);
      tagged.writeUInt32LE((0x4b470000 | buf.readUInt32LE(f.offset)) >>> 0);
      parts.push(tagged);
      at = f.offset + 4;
    } else if (/^cache\[\d+\]\.stream\[\d+\]\.cells$/.test(f.name) && buf.readUInt32LE(f.offset) > 0) {
      const cells = buf.readUInt32LE(f.offset);
      parts.push(buf.subarray(at, f.offset + 4));
      const geometry = Buffer.alloc(20);
      [streamSize, cells, 1, 0, cells].forEach((v, i) => {
        geometry.writeUInt32LE(v, i * 4);
      });
      parts.push(geometry);
      at = f.offset + 4;
    }
  }
  parts.push(buf.subarray(at));
  return Buffer.concat(parts);
}
