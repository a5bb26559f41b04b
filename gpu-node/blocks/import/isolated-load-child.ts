/**
 * The disposable process of isolated-load.ts: loads one state file into a fresh context with the
 * serving engine's shape and llama.cpp binary (a patched build writes another state format), the
 * weights on the CPU, and prints one JSON line, `{ tokens, cellsStart }`. If llama.cpp
 * aborts or allocates without bound on the file, only this process dies. It is a script (it runs
 * on import), so it is spawned, never imported.
 */
import { getLlama } from "node-llama-cpp";
import { LAST_BUILD_ONLY } from "../../engine/llama-binary.js";
// A type only (erased): this script never loads the parent's module.
import type { IsolatedLoadRequest } from "./isolated-load.js";

const req = JSON.parse(process.argv[2] ?? "{}") as IsolatedLoadRequest;
// The parent's end of stdin closing means the parent is gone: stop instead of loading on.
process.stdin.on("end", () => process.exit(1));
process.stdin.resume();
const llama =
  req.binary === "lastBuild"
    ? await getLlama("lastBuild", { maxThreads: 1, ...LAST_BUILD_ONLY })
    : await getLlama({ gpu: req.binary === "cpu" ? false : "auto", maxThreads: 1, progressLogs: false });
const model = await llama.loadModel({ modelPath: req.modelPath, gpuLayers: 0 });
const context = await model.createContext({
  sequences: req.slots,
  contextSize: req.contextSize,
  batchSize: req.batchSize,
  flashAttention: req.flashAttention,
  threads: { ideal: 1, min: 1 },
  swaFullCache: req.swaFullCache,
  experimentalKvCacheKeyType: req.kvType,
  experimentalKvCacheValueType: req.kvType,
});
const seq = context.getSequence();
await seq.loadStateFromFile(req.statePath, { acceptRisk: true });
process.stdout.write(
  `${JSON.stringify({ tokens: seq.nextTokenIndex, cellsStart: seq.stateCellsStartIndex })}\n`,
);
process.exit(0);
