/**
 * The probe hashes `bench graft` would compute, each from a fresh engine: the same tokens and
 * probe tokens (its random stream for the KV type), evaluated in a context that held nothing
 * before, then the probe's full distribution hashed as `bench graft` does on its recompute path.
 * `bench graft` measures every length in one engine after a warm-up, so a build whose cell
 * placement depends on what a slot held before can give other hashes there; this gives the
 * history-free reference to compare builds against.
 *
 * Usage: node --import tsx bench/fresh-probe.ts --model M.gguf [--kv q8_0] [--lengths 500,1500]
 *   [--binary cpu|lastBuild]
 */
import { parseArgs } from "node:util";
import type { Token } from "node-llama-cpp";
import { Engine, type KvType, type LlamaBinary } from "../gpu-node/engine/engine.js";
import { evaluateProbe } from "../gpu-node/engine/probe.js";
import { randomTokens } from "../gpu-node/verify.js";
import { Xoshiro128 } from "../shared/random.js";

const { values } = parseArgs({
  options: {
    model: { type: "string" },
    kv: { type: "string", default: "q8_0" },
    lengths: { type: "string", default: "500,1500" },
    binary: { type: "string", default: "cpu" },
  },
});
if (!values.model) throw new Error("--model is required");
if (values.kv !== "f16" && values.kv !== "q8_0")
  throw new Error(`--kv must be f16 or q8_0, got ${values.kv}`);
const binaries: readonly LlamaBinary[] = ["cpu", "lastBuild", "auto"];
if (!binaries.includes(values.binary as LlamaBinary))
  throw new Error(`--binary must be one of ${binaries.join(", ")}, got ${values.binary}`);
const binary = values.binary as LlamaBinary;
const kv = values.kv as KvType;
const lengths = values.lengths.split(",").map(Number);
if (lengths.some((n) => !Number.isInteger(n) || n < 1))
  throw new Error("--lengths must be positive integers");

const open = (contextSize: number) =>
  Engine.open({ modelPath: values.model as string, slots: 2, contextSize, kvType: kv, binary });
const first = await open(64);
const vocab = first.vocabSize;
await first.dispose();
// bench graft's stream: a warm-up draw, then each length's tokens and its probe token.
const rng = new Xoshiro128(`bench-${kv}`);
randomTokens(rng, Math.min(256, Math.min(...lengths)), vocab);
for (const length of lengths) {
  const tokens = randomTokens(rng, length, vocab);
  const [probe] = randomTokens(rng, 1, vocab) as [Token];
  const engine = await open(Math.max(...lengths) + 8);
  try {
    const slot = engine.slot(0);
    await slot.evaluateWithoutGeneratingNewTokens(tokens);
    await slot.controlledEvaluate([[probe, { generateNext: { token: true } }]]);
    await slot.eraseContextTokenRanges([{ start: length, end: slot.nextTokenIndex }]);
    const result = await evaluateProbe(slot, probe, engine.vocabSize);
    console.log(JSON.stringify({ binary, kv, length, probeSha256: result.sha256 }));
  } finally {
    await engine.dispose();
  }
}
