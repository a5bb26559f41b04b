/** Writes seeded random-weight GGUF models that llama.cpp loads as real architectures. */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { Xoshiro128 } from "../../shared/random.js";
import {
  type MetaValue,
  paddingAfter,
  type TensorSpec,
  TensorType,
  tensorBytes,
  writeGgufHeader,
} from "./gguf.js";
import type { ModelSpec } from "./presets.js";
import { normalHalfTable, normalQ8Table, Q8_LEVEL_SCALE, toHalfBits } from "./random.js";
import { buildVocabulary } from "./vocab.js";

const WEIGHT_STD = 0.02;
const CHUNK_ELEMENTS = 1 << 22;

/** Progress callback: bytes written so far out of the total. */
export type Progress = (written: number, total: number) => void;

/** A model's tokenizer as GGUF metadata carries it (SentencePiece-style, llama.cpp's `llama` tokenizer). */
export interface TokenizerSpec {
  tokens: string[];
  scores: Float32Array;
  types: Int32Array;
  unknown: number;
  bos: number;
  eos: number;
  /** A Jinja chat template (`tokenizer.chat_template`), from which node-llama-cpp picks its chat wrapper. */
  chatTemplate?: string;
}

/** The embedded synthetic vocabulary of `size` pieces (`<unk>`, `<s>`, `</s>` first). */
export function syntheticTokenizer(size: number): TokenizerSpec {
  return { ...buildVocabulary(size), unknown: 0, bos: 1, eos: 2 };
}

/** The GGUF metadata of a model of this spec named `name`, with this tokenizer. */
export function modelMetadata(
  spec: ModelSpec,
  name: string,
  vocab: TokenizerSpec = syntheticTokenizer(spec.vocab),
): Record<string, MetaValue> {
  const a = spec.arch;
  if (vocab.tokens.length !== spec.vocab)
    throw new Error(`the tokenizer has ${vocab.tokens.length} tokens, the spec ${spec.vocab}`);
  const u32 = (value: number): MetaValue => ({ type: "u32", value });
  const meta: Record<string, MetaValue> = {
    "general.architecture": { type: "str", value: a },
    "general.name": { type: "str", value: name },
    "general.alignment": u32(32),
    "general.file_type": u32(spec.weights === "q8_0" ? 7 : 1),
    "general.quantization_version": u32(2),
    [`${a}.vocab_size`]: u32(spec.vocab),
    [`${a}.context_length`]: u32(spec.contextLength),
    [`${a}.embedding_length`]: u32(spec.embd),
    [`${a}.block_count`]: u32(spec.layers),
    [`${a}.feed_forward_length`]: u32(spec.ffn),
    [`${a}.attention.head_count`]: u32(spec.heads),
    [`${a}.attention.head_count_kv`]: u32(spec.kvHeads),
    [`${a}.attention.key_length`]: u32(spec.headDim),
    [`${a}.attention.value_length`]: u32(spec.headDim),
    [`${a}.rope.dimension_count`]: u32(spec.headDim),
    [`${a}.rope.freq_base`]: { type: "f32", value: a === "gemma3" ? 1_000_000 : 10_000 },
    [`${a}.attention.layer_norm_rms_epsilon`]: { type: "f32", value: 1e-6 },
    "tokenizer.ggml.model": { type: "str", value: "llama" },
    "tokenizer.ggml.tokens": { type: "str[]", value: vocab.tokens },
    "tokenizer.ggml.scores": { type: "f32[]", value: vocab.scores },
    "tokenizer.ggml.token_type": { type: "i32[]", value: vocab.types },
    "tokenizer.ggml.unknown_token_id": u32(vocab.unknown),
    "tokenizer.ggml.bos_token_id": u32(vocab.bos),
    "tokenizer.ggml.eos_token_id": u32(vocab.eos),
    "tokenizer.ggml.add_bos_token": { type: "bool", value: true },
    "tokenizer.ggml.add_eos_token": { type: "bool", value: false },
  };
  if (a === "gemma3") meta[`${a}.attention.sliding_window`] = u32(spec.slidingWindow);
  if (vocab.chatTemplate !== undefined)
    meta["tokenizer.chat_template"] = { type: "str", value: vocab.chatTemplate };
  return meta;
}

/** The tensors of a spec, in file order; norms are f32, matrices f16 or q8_0. */
export function tensorList(spec: ModelSpec): TensorSpec[] {
  const w = spec.weights === "q8_0" ? TensorType.Q8_0 : TensorType.F16;
  const norm = (name: string, n: number): TensorSpec => ({ name, dims: [n], type: TensorType.F32 });
  const mat = (name: string, inner: number, outer: number): TensorSpec => ({
    name,
    dims: [inner, outer],
    type: w,
  });
  const q = spec.heads * spec.headDim;
  const kv = spec.kvHeads * spec.headDim;
  const list: TensorSpec[] = [
    mat("token_embd.weight", spec.embd, spec.vocab),
    norm("output_norm.weight", spec.embd),
  ];
  if (spec.arch !== "gemma3") list.push(mat("output.weight", spec.embd, spec.vocab));
  for (let i = 0; i < spec.layers; i++) {
    const p = `blk.${i}.`;
    list.push(
      norm(`${p}attn_norm.weight`, spec.embd),
      mat(`${p}attn_q.weight`, spec.embd, q),
      mat(`${p}attn_k.weight`, spec.embd, kv),
      mat(`${p}attn_v.weight`, spec.embd, kv),
      mat(`${p}attn_output.weight`, q, spec.embd),
      norm(`${p}ffn_norm.weight`, spec.embd),
      mat(`${p}ffn_gate.weight`, spec.embd, spec.ffn),
      mat(`${p}ffn_up.weight`, spec.embd, spec.ffn),
      mat(`${p}ffn_down.weight`, spec.ffn, spec.embd),
    );
    if (spec.arch !== "llama")
      list.push(norm(`${p}attn_q_norm.weight`, spec.headDim), norm(`${p}attn_k_norm.weight`, spec.headDim));
    if (spec.arch === "gemma3")
      list.push(
        norm(`${p}post_attention_norm.weight`, spec.embd),
        norm(`${p}post_ffw_norm.weight`, spec.embd),
      );
  }
  return list;
}

/** Streams one tensor's seeded data; RMS-norm weights are 1.0 so activations stay finite. */
function writeTensor(fd: number, t: TensorSpec, seed: string, tables: Tables, onBytes: (n: number) => void) {
  const total = t.dims.reduce((a, b) => a * b, 1);
  if (t.type === TensorType.F32) {
    const buf = Buffer.alloc(total * 4);
    for (let i = 0; i < total; i++) buf.writeFloatLE(1, i * 4);
    writeSync(fd, buf);
    onBytes(buf.length);
    return;
  }
  const rng = new Xoshiro128(`${seed}/${t.name}`);
  if (t.type === TensorType.F16) {
    const words = new Uint32Array(CHUNK_ELEMENTS / 2);
    const table = tables.half;
    for (let done = 0; done < total; done += CHUNK_ELEMENTS) {
      const n = Math.min(CHUNK_ELEMENTS, total - done);
      const pairs = n >>> 1;
      for (let i = 0; i < pairs; i++) {
        const r = rng.next();
        words[i] = ((table[r & 0xffff] ?? 0) | ((table[r >>> 16] ?? 0) << 16)) >>> 0;
      }
      let bytes = Buffer.from(words.buffer, 0, pairs * 4);
      if (n & 1)
        bytes = Buffer.concat([
          bytes,
          Buffer.from(new Uint16Array([tables.half[rng.next() & 0xffff] ?? 0]).buffer),
        ]);
      writeSync(fd, bytes);
      onBytes(bytes.length);
    }
    return;
  }
  // q8_0: blocks of 32 int8 quants with one f16 scale.
  const blocksPerChunk = CHUNK_ELEMENTS / 32;
  const buf = Buffer.alloc(blocksPerChunk * 34);
  for (let block = 0, blocks = total / 32; block < blocks; block += blocksPerChunk) {
    const n = Math.min(blocksPerChunk, blocks - block);
    for (let b = 0; b < n; b++) {
      const o = b * 34;
      buf.writeUInt16LE(tables.q8Scale, o);
      for (let k = 0; k < 32; k += 4) {
        const r = rng.next();
        buf.writeInt8(tables.q8[r & 0xff] ?? 0, o + 2 + k);
        buf.writeInt8(tables.q8[(r >>> 8) & 0xff] ?? 0, o + 3 + k);
        buf.writeInt8(tables.q8[(r >>> 16) & 0xff] ?? 0, o + 4 + k);
        buf.writeInt8(tables.q8[r >>> 24] ?? 0, o + 5 + k);
      }
    }
    writeSync(fd, buf.subarray(0, n * 34));
    onBytes(n * 34);
  }
}

interface Tables {
  half: Uint16Array;
  q8: Int8Array;
  q8Scale: number;
}

/**
 * Writes the model to `path` atomically (temp file, fsync, rename). The same spec and seed
 * give byte-identical files. Returns the file size.
 */
export function writeSyntheticModel(
  path: string,
  spec: ModelSpec,
  seed: string,
  onProgress?: Progress,
  tokenizer?: TokenizerSpec,
): number {
  const tables: Tables = {
    half: normalHalfTable(WEIGHT_STD),
    q8: normalQ8Table(),
    q8Scale: toHalfBits(WEIGHT_STD / Q8_LEVEL_SCALE),
  };
  const meta = modelMetadata(spec, `kvgraft-synthetic-${spec.arch}-seed-${seed}`, tokenizer);
  return writeModelFile(
    path,
    meta,
    tensorList(spec),
    (fd, t, onBytes) => writeTensor(fd, t, seed, tables, onBytes),
    onProgress,
  );
}

/**
 * Writes a GGUF file atomically (temp file, fsync, rename): the header, then each tensor's data
 * from `writeData` (which must write exactly the tensor's bytes), each padded to the alignment.
 * Returns the file size.
 */
export function writeModelFile(
  path: string,
  meta: Record<string, MetaValue>,
  tensors: TensorSpec[],
  writeData: (fd: number, tensor: TensorSpec, onBytes: (n: number) => void) => void,
  onProgress?: Progress,
): number {
  const temp = `${path}.tmp-${process.pid}`;
  const fd = openSync(temp, "w");
  try {
    let written = writeGgufHeader(fd, meta, tensors);
    const total = written + tensors.reduce((s, t) => s + tensorBytes(t) + paddingAfter(tensorBytes(t)), 0);
    const onBytes = (n: number) => {
      written += n;
      onProgress?.(written, total);
    };
    for (const t of tensors) {
      const before = written;
      writeData(fd, t, onBytes);
      if (written - before !== tensorBytes(t))
        throw new Error(`${t.name}: wrote ${written - before} bytes, the tensor has ${tensorBytes(t)}`);
      const pad = paddingAfter(tensorBytes(t));
      if (pad > 0) {
        writeSync(fd, Buffer.alloc(pad));
        onBytes(pad);
      }
    }
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temp, path);
    return written;
  } catch (err) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw err;
  }
}
