// The parts of a graft on our engine build, timed one by one (medians printed as JSON lines):
//   A: a block read from its file into the memory tier (page cache dropped), loaded, one token; then
//      loads from the tier (warm) with the token timed apart;
//   B: the device copy of a hot block into the other slot: the native call alone, with the locks,
//      and the token after it against a token on that slot without a copy;
//   C: the hot step: the erase, the token evaluated without logits, the token with the next one sampled.
// Run from the project root after `npm run build`, with the engine build installed (KV_LLAMA=lastBuild):
//   node scripts/restore-parts.mjs MODEL.gguf TOKENS SWA_FULL_CACHE(true|false)
// The figures in docs/benchmarks.md: gemma3-12b.gguf 11994 false on the H200, 2026-11-30.

import { dropPageCache } from "../dist/gpu-node/bench/page-cache.js";
import { BlockStore } from "../dist/gpu-node/blocks/block-store.js";
import { MemoryTier } from "../dist/gpu-node/blocks/memory-tier.js";
import { Engine } from "../dist/gpu-node/engine/engine.js";
import {
  copySequence,
  loadSequenceFromMemory,
  nativeStateApi,
} from "../dist/gpu-node/engine/state-memory.js";
import { BLOCK_FORMAT_VERSION } from "../dist/shared/protocol.js";

const [model, nArg, swaFull] = process.argv.slice(2);
const n = Number(nArg);
const e = await Engine.open({
  modelPath: model,
  slots: 2,
  contextSize: n + 8,
  binary: "lastBuild",
  swaFullCache: swaFull === "true",
});
const api = nativeStateApi(e.llama);
const memory = MemoryTier.open(api, 16 * 2 ** 30);
const { store } = await BlockStore.open(`/root/diag4store-${n}`);
const a = e.slot(0),
  b = e.slot(1);
const probe = 777;
const one = (s) => s.controlledEvaluate([[probe, { generateNext: { token: true } }]]);
const evalOnly = (s) => s.evaluateWithoutGeneratingNewTokens([probe]);
const erase = (s) => s.eraseContextTokenRanges([{ start: n, end: s.nextTokenIndex }]);
const med = (xs) => +[...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)].toFixed(2);
const now = () => performance.now();
const log = (o) => console.log(JSON.stringify(o));
await a.evaluateWithoutGeneratingNewTokens(Array.from({ length: 256 }, (_, i) => 1000 + i));
await a.clearHistory();
const toks = Array.from({ length: n }, (_, i) => 300 + ((i * 7919) % 200000));
await a.evaluateWithoutGeneratingNewTokens(toks);
await one(a);
await erase(a);
const temp = store.tempPath("bench");
await a.saveStateToFile(temp);
const m = await store.commit(temp, {
  formatVersion: BLOCK_FORMAT_VERSION,
  tokenCount: n,
  tokensSha256: "0".repeat(64),
  textSha256: "0".repeat(64),
  model: e.modelFingerprint,
  engine: e.engineFingerprint,
  probe: { token: probe, sha256: "0".repeat(64) },
  createdAt: new Date().toISOString(),
});
const hash = { sizeBytes: m.sizeBytes, chunkBytes: m.chunks.bytes, chunks: m.chunks.sha256 };
const path = await store.checkedStatePath(m.sha256);
// A: as the bench: cold read (page cache dropped), load, token; then warm load + token, x3
const A = { coldRead: [], coldLoad: [], coldTok: [], warmLoad: [], warmTok: [], warmLoad2: [], warmTok2: [] };
for (let i = 0; i < 3; i++) {
  memory.remove(m.sha256);
  await dropPageCache();
  let t = now();
  const read = await memory.readChecked(m.sha256, path, hash);
  A.coldRead.push(now() - t);
  t = now();
  await loadSequenceFromMemory(api, b, read.range);
  A.coldLoad.push(now() - t);
  read.release();
  t = now();
  await one(b);
  A.coldTok.push(now() - t);
  await erase(b);
  const held = memory.acquire(m.sha256);
  t = now();
  await loadSequenceFromMemory(api, b, held.range);
  A.warmLoad.push(now() - t);
  t = now();
  await one(b);
  A.warmTok.push(now() - t);
  await erase(b);
  t = now();
  await loadSequenceFromMemory(api, b, held.range);
  A.warmLoad2.push(now() - t);
  held.release();
  t = now();
  await one(b);
  A.warmTok2.push(now() - t);
  await erase(b);
}
log({
  part: "A",
  n,
  GB: m.sizeBytes / 1e9,
  ...Object.fromEntries(Object.entries(A).map(([k, v]) => [k, v.map((x) => +x.toFixed(1))])),
});
// B: device copy: the native call alone, the wrapper, the token after
const B = { nativeCopy: [], wrapperCopy: [], tokAfterCopy: [], tokB: [], tokA: [] };
for (let i = 0; i < 5; i++) {
  await erase(a);
  let t = now();
  await one(a);
  B.tokA.push(now() - t);
  await erase(a);
  t = now();
  await copySequence(api, a, b);
  B.wrapperCopy.push(now() - t);
  t = now();
  await one(b);
  B.tokAfterCopy.push(now() - t);
  await erase(b);
  t = now();
  await one(b);
  B.tokB.push(now() - t);
  await erase(b);
  t = now();
  api.copySequence(a._context._ctx, a._sequenceId, b._sequenceId);
  B.nativeCopy.push(now() - t);
  await copySequence(api, a, b);
  await one(b);
  await erase(b);
}
log({ part: "B", ...Object.fromEntries(Object.entries(B).map(([k, v]) => [k, med(v)])) });
// C: the hot token: erase, decode without sampling, decode with sampling
const C = { erase: [], evalOnly: [], sampled: [], sampledAgain: [] };
for (let i = 0; i < 9; i++) {
  let t = now();
  await erase(a);
  C.erase.push(now() - t);
  t = now();
  await evalOnly(a);
  C.evalOnly.push(now() - t);
  await erase(a);
  t = now();
  await one(a);
  C.sampled.push(now() - t);
  await erase(a);
  t = now();
  await one(a);
  C.sampledAgain.push(now() - t);
  await erase(a);
}
log({ part: "C", ...Object.fromEntries(Object.entries(C).map(([k, v]) => [k, med(v)])) });
await e.dispose();
