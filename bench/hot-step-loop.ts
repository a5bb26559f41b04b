/**
 * A loop of hot steps (erase the slot's tail, evaluate one token and pick the next greedily), to
 * profile what a hot graft's token costs besides llama.cpp. Prints the mean step time and the
 * event loop's utilization over the loop: the share of it the main thread spent running
 * JavaScript (and native calls made from it) rather than waiting for libuv's worker threads.
 * `--path library` takes node-llama-cpp's evaluation (decode, then sample: two worker calls),
 * `--path native` our engine build's greedy step (one call; gpu-node/engine/greedy-step.ts).
 * `node --cpu-prof` shows which functions the main thread's share is.
 *
 * Usage: node [--cpu-prof] --import tsx bench/hot-step-loop.ts --model M.gguf [--tokens 200]
 *   [--steps 3000] [--binary lastBuild|cpu] [--path library|native]
 */
import { parseArgs } from "node:util";
import type { Token } from "node-llama-cpp";
import { Engine, type LlamaBinary } from "../gpu-node/engine/engine.js";
import { greedyStep } from "../gpu-node/engine/greedy-step.js";

const { values } = parseArgs({
  options: {
    model: { type: "string" },
    tokens: { type: "string", default: "200" },
    steps: { type: "string", default: "3000" },
    binary: { type: "string", default: "cpu" },
    path: { type: "string", default: "library" },
  },
});
if (!values.model) throw new Error("--model is required");
const binaries: readonly LlamaBinary[] = ["cpu", "lastBuild", "auto"];
if (!binaries.includes(values.binary as LlamaBinary))
  throw new Error(`--binary must be one of ${binaries.join(", ")}, got ${values.binary}`);
if (values.path !== "library" && values.path !== "native")
  throw new Error(`--path must be library or native, got ${values.path}`);
const length = Number(values.tokens);
const steps = Number(values.steps);
const engine = await Engine.open({
  modelPath: values.model,
  slots: 1,
  contextSize: length + 16,
  binary: values.binary as LlamaBinary,
});
try {
  const api = engine.nativeApi;
  if (values.path === "native" && !api)
    throw new Error("--path native needs our engine build (--binary lastBuild)");
  const slot = engine.slot(0);
  await slot.evaluateWithoutGeneratingNewTokens(
    Array.from({ length }, (_, i) => (300 + (i % (engine.vocabSize - 300))) as Token),
  );
  const step = async () => {
    await slot.eraseContextTokenRanges([{ start: length, end: slot.nextTokenIndex }]);
    if (api && values.path === "native") await greedyStep(api, slot, [301 as Token]);
    else await slot.controlledEvaluate([[301 as Token, { generateNext: { token: true } }]]);
  };
  for (let i = 0; i < Math.min(200, steps); i++) await step(); // warm-up
  const started = performance.now();
  const before = performance.eventLoopUtilization();
  for (let i = 0; i < steps; i++) await step();
  const loop = performance.eventLoopUtilization(before);
  const ms = (performance.now() - started) / steps;
  console.log(
    `${steps} hot steps (${values.path}): ${ms.toFixed(3)} ms a step; main thread busy ${(loop.utilization * 100).toFixed(1)}% ` +
      `(${((loop.active / steps) * 1).toFixed(3)} ms a step), idle waiting for the workers the rest`,
  );
} finally {
  await engine.dispose();
}
