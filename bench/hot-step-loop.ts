/**
 * A loop of hot steps (erase the slot's tail, evaluate one token and sample it greedily), to
 * profile what a hot graft's token costs besides llama.cpp. Prints the mean step time and the
 * event loop's utilization over the loop: the share of it the main thread spent running
 * JavaScript (and native calls made from it) rather than waiting for libuv's worker threads
 * (decode, then sample). `node --cpu-prof` shows which functions that share is.
 *
 * Usage: node [--cpu-prof] --import tsx bench/hot-step-loop.ts --model M.gguf [--tokens 200]
 *   [--steps 3000] [--binary lastBuild|cpu]
 */
import { parseArgs } from "node:util";
import type { Token } from "node-llama-cpp";
import { Engine, type LlamaBinary } from "../gpu-node/engine/engine.js";

const { values } = parseArgs({
  options: {
    model: { type: "string" },
    tokens: { type: "string", default: "200" },
    steps: { type: "string", default: "3000" },
    binary: { type: "string", default: "cpu" },
  },
});
if (!values.model) throw new Error("--model is required");
const binaries: readonly LlamaBinary[] = ["cpu", "lastBuild", "auto"];
if (!binaries.includes(values.binary as LlamaBinary))
  throw new Error(`--binary must be one of ${binaries.join(", ")}, got ${values.binary}`);
const length = Number(values.tokens);
const steps = Number(values.steps);
const engine = await Engine.open({
  modelPath: values.model,
  slots: 1,
  contextSize: length + 16,
  binary: values.binary as LlamaBinary,
});
try {
  const slot = engine.slot(0);
  await slot.evaluateWithoutGeneratingNewTokens(
    Array.from({ length }, (_, i) => (300 + (i % (engine.vocabSize - 300))) as Token),
  );
  const step = async () => {
    await slot.eraseContextTokenRanges([{ start: length, end: slot.nextTokenIndex }]);
    await slot.controlledEvaluate([[301 as Token, { generateNext: { token: true } }]]);
  };
  for (let i = 0; i < Math.min(200, steps); i++) await step(); // warm-up
  const started = performance.now();
  const before = performance.eventLoopUtilization();
  for (let i = 0; i < steps; i++) await step();
  const loop = performance.eventLoopUtilization(before);
  const ms = (performance.now() - started) / steps;
  console.log(
    `${steps} hot steps: ${ms.toFixed(3)} ms a step; main thread busy ${(loop.utilization * 100).toFixed(1)}% ` +
      `(${((loop.active / steps) * 1).toFixed(3)} ms a step), idle waiting for the workers the rest`,
  );
} finally {
  await engine.dispose();
}
