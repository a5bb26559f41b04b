/**
 * The state-file validator against genuine states: every state llama.cpp writes for the tiny
 * llama, qwen3 and gemma3 (sliding window) models, at lengths around the window and with f16 and
 * q8_0 KV, is accepted; the layout it checks against is the model's own (layers, KV heads, head
 * sizes, KV types, read from the GGUF); and a one-field change is refused naming that field.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Token } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { type StateLayout, validateStateFile } from "../gpu-node/blocks/import/state-format.js";
import { referenceLayout } from "../gpu-node/blocks/import/state-reference.js";
import { Engine, type KvType } from "../gpu-node/engine/engine.js";
import { DomainError } from "../shared/errors.js";
import { sha256OfTokens } from "../shared/hash.js";
import { syntheticModel } from "./helpers/models.js";
import { fieldOffset, withGeometry } from "./helpers/state-fields.js";

const dir = mkdtempSync(join(tmpdir(), "kvgraft-state-format-"));
const CONTEXT = 1024;
const LENGTHS = [1, 63, 64, 65, 300, 900];

/** Bytes of one row of `n` values in ggml's f16 or q8_0 (blocks of 32: f16 scale + 32 int8). */
function rowBytes(kv: KvType, n: number): number {
  return kv === "f16" ? 2 * n : (n / 32) * 34;
}

/** The layout the GGUF metadata implies, in llama.cpp's own terms (type ids F16 = 1, Q8_0 = 8). */
function expectFromGguf(engine: Engine, kv: KvType, layout: StateLayout): void {
  const md = engine.model.fileInfo.metadata as unknown as Record<string, Record<string, unknown>>;
  const arch = String(md.general?.architecture);
  const hp = md[arch] as {
    block_count: number;
    attention: { head_count_kv: number; key_length: number; value_length: number };
  };
  const type = kv === "f16" ? 1 : 8;
  const layers = layout.caches.flatMap((c) => c.layers);
  expect(layers).toHaveLength(hp.block_count);
  expect(layout.caches).toHaveLength(engine.slidingWindow === null ? 1 : 2);
  expect(layout.streams).toBe(engine.slots.length);
  for (const l of layers)
    expect(l).toEqual({
      kType: type,
      kRowBytes: rowBytes(kv, hp.attention.head_count_kv * hp.attention.key_length),
      vType: type,
      vBytes: rowBytes(kv, hp.attention.head_count_kv * hp.attention.value_length),
      vWidth: 0,
    });
}

async function rejection(p: Promise<unknown>): Promise<{ code: string; field: unknown }> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DomainError);
  const d = err as DomainError;
  expect(d.status).toBe(422);
  return { code: d.code, field: d.details?.field };
}

const configs: { preset: "tiny-llama" | "tiny-qwen3" | "tiny-gemma3"; kv: KvType; swaFull: boolean }[] = [
  { preset: "tiny-llama", kv: "f16", swaFull: true },
  { preset: "tiny-llama", kv: "q8_0", swaFull: true },
  { preset: "tiny-qwen3", kv: "f16", swaFull: true },
  { preset: "tiny-gemma3", kv: "f16", swaFull: true },
  { preset: "tiny-gemma3", kv: "q8_0", swaFull: false },
];

describe("state-file validator on genuine states", () => {
  for (const { preset, kv, swaFull } of configs)
    it(`accepts every ${preset} ${kv} state (swaFullCache ${swaFull}) at ${LENGTHS.join(", ")} tokens`, async () => {
      const engine = await Engine.open({
        modelPath: syntheticModel(preset),
        slots: 2,
        contextSize: CONTEXT,
        kvType: kv,
        swaFullCache: swaFull,
      });
      try {
        const [a, b] = engine.slots as [(typeof engine.slots)[0], (typeof engine.slots)[0]];
        const layout = await referenceLayout(a, join(dir, `${preset}-${kv}-ref.state`));
        expectFromGguf(engine, kv, layout);
        for (const n of LENGTHS) {
          const tokens = Array.from({ length: n }, (_, i) => (300 + ((i * 7) % 500)) as Token);
          await b.clearHistory();
          await b.evaluateWithoutGeneratingNewTokens(tokens);
          const path = join(dir, `${preset}-${kv}-${swaFull}-${n}.state`);
          await b.saveStateToFile(path);
          const expectation = {
            layout,
            contextSize: CONTEXT,
            slidingWindow: engine.slidingWindow,
            vocabSize: engine.vocabSize,
            sequences: 2,
            tokenCount: n,
            tokensSha256: await sha256OfTokens(tokens),
          };
          await validateStateFile(path, expectation);
          // The state as the patched build writes it (cell geometry; the engine's own format when
          // that build is loaded) passes against its layout, and not against the stock one.
          const tagged = withGeometry(readFileSync(path), CONTEXT);
          writeFileSync(`${path}.geometry`, tagged);
          const patched = { ...expectation, layout: { ...layout, geometry: true } };
          const stock = { ...expectation, layout: { ...layout, geometry: false } };
          await validateStateFile(`${path}.geometry`, patched);
          expect(await rejection(validateStateFile(`${path}.geometry`, stock))).toEqual({
            code: "block_invalid",
            field: "cache[0].geometry",
          });
          if (!layout.geometry) {
            // A hand-made geometry (one range [0, cells)) whose range misses a cell is refused.
            const short = Buffer.from(tagged);
            const cellsAt = fieldOffset(readFileSync(path), "cache[0].streams");
            const rangeEnd = short.indexOf(Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]), cellsAt) + 8;
            short.writeUInt32LE(n - 1 + (n === 1 ? 2 : 0), rangeEnd);
            writeFileSync(`${path}.geometry-short`, short);
            const bad = await rejection(validateStateFile(`${path}.geometry-short`, patched));
            expect(bad.code).toBe("block_invalid");
            expect(String(bad.field)).toMatch(/^cache\[0\]\.geometry\./);
          }
          // The same state under a manifest that lies about its length is refused.
          expect(await rejection(validateStateFile(path, { ...expectation, tokenCount: n + 1 }))).toEqual({
            code: "block_invalid",
            field: "tokenCount",
          });
          if (n < 65) continue;
          // One wrong field in the last (for gemma3: the windowed) cache, named in the refusal.
          const bytes = readFileSync(path);
          const c = layout.caches.length - 1;
          const pos = Buffer.from(bytes);
          pos.writeInt32LE(-1, fieldOffset(bytes, `cache[${c}].cell[0].pos`));
          writeFileSync(`${path}.pos`, pos);
          expect(await rejection(validateStateFile(`${path}.pos`, expectation))).toEqual({
            code: "block_invalid",
            field: `cache[${c}].cell[0].pos`,
          });
          const row = Buffer.from(bytes);
          row.writeBigUInt64LE(64n, fieldOffset(bytes, `cache[${c}].layer[0].vRowBytes`));
          writeFileSync(`${path}.row`, row);
          expect(await rejection(validateStateFile(`${path}.row`, expectation))).toEqual({
            code: "block_invalid",
            field: `cache[${c}].layer[0].vRowBytes`,
          });
        }
      } finally {
        await engine.dispose();
      }
    }, 120_000);
});
