/**
 * Writes the trained weights (tools/model/train.py's weights.bin + weights.json) with the dataset's
 * vocabulary and the chat template as a GGUF file, through the project's writer
 * (gpu-node/synth/synth-model.ts), so llama.cpp runs it as its `llama` architecture:
 *   node --import tsx tools/model/export.ts --weights DIR --data DIR --out models/kvgraft-math.gguf
 */
import { closeSync, openSync, readFileSync, readSync, writeSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { tensorBytes } from "../../gpu-node/synth/gguf.js";
import { modelMetadata, tensorList, writeModelFile } from "../../gpu-node/synth/synth-model.js";
import { CHAT_TEMPLATE, MODEL_SPEC } from "./spec.js";

const weightsIndex = z.object({
  tensors: z.array(
    z.object({
      name: z.string(),
      dtype: z.enum(["f16", "f32"]),
      shape: z.array(z.number().int()),
      offset: z.number().int(),
      bytes: z.number().int(),
    }),
  ),
});
const vocabFile = z.object({
  tokens: z.array(z.string()),
  scores: z.array(z.number()),
  types: z.array(z.number().int()),
  bos: z.number().int(),
  eos: z.number().int(),
  unknown: z.number().int(),
});

function arg(name: string): string {
  const at = process.argv.indexOf(name);
  const value = at >= 0 ? process.argv[at + 1] : undefined;
  if (!value) throw new Error(`usage: export.ts --weights DIR --data DIR --out FILE (missing ${name})`);
  return value;
}

/** Exports the model; returns the file size. */
export function exportModel(weightsDir: string, dataDir: string, out: string): number {
  const index = weightsIndex.parse(JSON.parse(readFileSync(join(weightsDir, "weights.json"), "utf8")));
  const vocab = vocabFile.parse(JSON.parse(readFileSync(join(dataDir, "vocab.json"), "utf8")));
  const tensors = tensorList(MODEL_SPEC);
  const byName = new Map(index.tensors.map((t) => [t.name, t]));
  for (const t of tensors) {
    const w = byName.get(t.name);
    if (!w) throw new Error(`weights.json has no ${t.name}`);
    if (w.bytes !== tensorBytes(t))
      throw new Error(`${t.name}: ${w.bytes} bytes, the layout needs ${tensorBytes(t)}`);
    // GGUF lists dimensions innermost first; PyTorch's shape is outermost first.
    if (w.shape.slice().reverse().join("x") !== t.dims.join("x"))
      throw new Error(`${t.name}: shape ${w.shape.join("x")} does not fit ${t.dims.join("x")}`);
  }
  const meta = modelMetadata(MODEL_SPEC, "kvgraft-math", {
    tokens: vocab.tokens,
    scores: Float32Array.from(vocab.scores),
    types: Int32Array.from(vocab.types),
    bos: vocab.bos,
    eos: vocab.eos,
    unknown: vocab.unknown,
    chatTemplate: CHAT_TEMPLATE,
  });
  const source = openSync(join(weightsDir, "weights.bin"), "r");
  try {
    return writeModelFile(out, meta, tensors, (fd, t, onBytes) => {
      const w = byName.get(t.name);
      if (!w) throw new Error(`weights.json has no ${t.name}`);
      const buf = Buffer.alloc(w.bytes);
      if (readSync(source, buf, 0, w.bytes, w.offset) !== w.bytes) throw new Error(`${t.name}: short read`);
      writeSync(fd, buf);
      onBytes(buf.length);
    });
  } finally {
    closeSync(source);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const size = exportModel(arg("--weights"), arg("--data"), arg("--out"));
  console.error(`export: ${arg("--out")} (${size} bytes)`);
}
