import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";

const dir = mkdtempSync(join(tmpdir(), "kvgraft-synth-"));
const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

describe("kvgraft synth-model", () => {
  it("writes byte-identical files for the same seed and different ones for another", () => {
    for (const [name, seed] of [
      ["a", "7"],
      ["b", "7"],
      ["c", "8"],
    ] as const) {
      const r = runCli([
        "synth-model",
        "--preset",
        "tiny-qwen3",
        "--seed",
        seed,
        "--out",
        join(dir, `${name}.gguf`),
        "--json",
      ]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.json).toMatchObject({ preset: "tiny-qwen3", seed });
    }
    expect(sha(join(dir, "a.gguf"))).toBe(sha(join(dir, "b.gguf")));
    expect(sha(join(dir, "a.gguf"))).not.toBe(sha(join(dir, "c.gguf")));
  });

  it("applies dimension flags over the preset, and the files load and tokenize any UTF-8 text", async () => {
    const out = join(dir, "custom.gguf");
    const r = runCli([
      "synth-model",
      "--preset",
      "tiny-gemma3",
      "--layers",
      "12",
      "--vocab",
      "600",
      "--out",
      out,
      "--json",
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json).toMatchObject({ spec: { arch: "gemma3", layers: 12, vocab: 600 } });
    const llama = await getLlama({ gpu: false });
    const model = await llama.loadModel({ modelPath: out });
    try {
      const text = "Ünïcödé ∑ 漢字 🙂 and 1,000";
      expect(model.detokenize(model.tokenize(text))).toBe(text);
      expect(model.fileInsights.swaSize).toBe(64);
    } finally {
      await model.dispose();
    }
  });

  it("rejects bad flags with a usage error (exit 2)", () => {
    for (const args of [
      ["synth-model", "--out", join(dir, "x.gguf")],
      ["synth-model", "--preset", "nope", "--out", join(dir, "x.gguf")],
      ["synth-model", "--preset", "tiny-llama", "--out", join(dir, "x.gguf"), "--layers", "-3"],
      ["synth-model", "--preset", "tiny-llama", "--out", join(dir, "x.gguf"), "--quant", "q4"],
      ["synth-model", "--preset", "tiny-llama", "--out", join(dir, "x.gguf"), "--bogus"],
      ["synth-model", "--preset", "tiny-llama", "--out", join(dir, "x.gguf"), "--heads", "3"],
    ]) {
      const r = runCli(args);
      expect(r.status, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/kvgraft synth-model: .+/);
    }
  });
});
