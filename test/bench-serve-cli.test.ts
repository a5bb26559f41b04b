/**
 * `kvgraft bench serve` and `kvgraft bench batches` on the tiny model (CPU smoke checks, nothing
 * timed): the refusal without a llama-server binary, kvgraft's side alone through a real
 * `kvgraft serve gpu` child with every request answered, and the decode batches of concurrent
 * grafts (more than one sequence per decode).
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { syntheticModel } from "./helpers/models.js";

describe("kvgraft bench serve and batches", () => {
  it("refuses without a llama-server binary, naming what to do", () => {
    const r = runCli(["bench", "serve", "--model", syntheticModel("tiny-llama")]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--llama-server BIN is required.*--only kvgraft/);
    const missing = runCli([
      "bench",
      "serve",
      "--model",
      syntheticModel("tiny-llama"),
      "--llama-server",
      "/nonexistent",
    ]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("no such file");
  });

  it("runs kvgraft's side of the hot-1 and warm-3 workloads and writes the serving document", () => {
    const out = join(mkdtempSync(join(tmpdir(), "kvgraft-serve-cli-")), "serve.json");
    const r = runCli([
      "bench",
      "serve",
      "--model",
      syntheticModel("tiny-llama"),
      "--only",
      "kvgraft",
      "--workloads",
      "hot-1,warm-3",
      "--rate",
      "8",
      "--duration",
      "1",
      "--slots",
      "2",
      "--context",
      "512",
      "--block-chars",
      "200",
      "--max-tokens",
      "4",
      "--out",
      out,
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\| hot-1 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| - \| - \| - \|/);
    const doc = JSON.parse(readFileSync(out, "utf8")) as {
      workloads: Array<{
        name: string;
        blocks: number;
        blockTokens: number;
        kvgraft: Record<string, number>;
        llamaServer: null;
      }>;
    };
    expect(doc.workloads.map((w) => [w.name, w.blocks, w.llamaServer])).toEqual([
      ["hot-1", 1, null],
      ["warm-3", 3, null],
    ]);
    for (const w of doc.workloads) {
      expect(w.blockTokens).toBeGreaterThan(0);
      expect(w.kvgraft.sent).toBe(8);
      expect(w.kvgraft.ok).toBe(8);
      for (const k of ["throughputRps", "p50Ms", "p99Ms", "tokensPerS", "meanDecodeBatch"])
        expect(w.kvgraft[k]).toBeGreaterThan(0);
    }
  });

  it("reports decode calls of more than one sequence for concurrent grafts", () => {
    const r = runCli([
      "bench",
      "batches",
      "--model",
      syntheticModel("tiny-llama"),
      "--slots",
      "4",
      "--clients",
      "4",
      "--rounds",
      "1",
      "--max-tokens",
      "8",
      "--workload",
      "distinct",
      "--json",
    ]);
    expect(r.status, r.stderr).toBe(0);
    const json = r.json as { grafts: number; tokensOut: number; meanBatch: number; outputsAgree: boolean };
    expect([json.grafts, json.tokensOut]).toEqual([4, 32]);
    expect(json.meanBatch).toBeGreaterThan(1);
  });
});
