/**
 * `kvgraft bench serve` and `kvgraft bench batches` on the tiny model (CPU smoke checks, nothing
 * timed): the refusal without a llama-server binary, kvgraft's side alone through a real
 * `kvgraft serve gpu` child with every request answered, and the decode batches of concurrent
 * grafts (more than one sequence per decode); the llama-server side against a stand-in for it
 * (test/fixtures/stand-in-llama-server.mjs): its flags, a warm-up that fills every slot, and its
 * decode batch and prompt tokens read from its /metrics.
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { syntheticModel } from "./helpers/models.js";

/** A short open-loop run on the tiny model: 8 requests in 1 s, `slots` slots, 4 tokens each. */
const smallRun = (slots = 2) => [
  "--rate",
  "8",
  "--duration",
  "1",
  "--slots",
  String(slots),
  "--context",
  "512",
  "--block-chars",
  "200",
  "--max-tokens",
  "4",
];

/**
 * `bench serve` of kvgraft's side alone on the tiny model, `args` after the model, its document
 * written to `out` in a new directory.
 */
function serveAlone(...args: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "kvgraft-serve-cli-"));
  const out = join(dir, "serve.json");
  const model = syntheticModel("tiny-llama");
  const r = runCli(["bench", "serve", "--model", model, "--only", "kvgraft", ...args, "--out", out]);
  return { out, r };
}

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

  it("runs kvgraft's side of the hot-1, warm-3 and cold-3 workloads and writes the serving document", () => {
    const logs = mkdtempSync(join(tmpdir(), "kvgraft-serve-logs-"));
    const { out, r } = serveAlone(
      // --only wins over a peer given beside it (this binary is not a llama-server: it must not run).
      "--llama-server",
      process.execPath,
      "--workloads",
      "hot-1,warm-3,cold-3",
      ...smallRun(),
      "--log-dir",
      logs,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\| hot-1 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| - \| - \| - \| - \| - \|/);
    const doc = JSON.parse(readFileSync(out, "utf8")) as {
      workloads: Array<{
        name: string;
        blocks: number;
        blockTokens: number;
        kvgraft: Record<string, number> & { restoresByTier: Record<"hot" | "warm" | "cold", number> };
        llamaServer: null;
      }>;
    };
    expect(doc.workloads.map((w) => [w.name, w.blocks, w.llamaServer])).toEqual([
      ["hot-1", 1, null],
      ["warm-3", 3, null],
      ["cold-3", 3, null],
    ]);
    // Three blocks on two slots: what no slot holds comes from RAM (warm-3), or from disk with the
    // warm tier off (cold-3).
    const tiers = Object.fromEntries(doc.workloads.map((w) => [w.name, w.kvgraft.restoresByTier]));
    expect(tiers["warm-3"]?.warm).toBeGreaterThan(0);
    expect(tiers["warm-3"]?.cold).toBe(0);
    expect(tiers["cold-3"]?.cold).toBeGreaterThan(0);
    expect(tiers["cold-3"]?.warm).toBe(0);
    for (const w of doc.workloads) {
      expect(w.blockTokens).toBeGreaterThan(0);
      expect(w.kvgraft.sent).toBe(8);
      expect(w.kvgraft.ok).toBe(8);
      for (const k of ["throughputRps", "p50Ms", "p99Ms", "tokensPerS", "meanDecodeBatch"])
        expect(w.kvgraft[k]).toBeGreaterThan(0);
      // The node's batched steps (the CPU build has no native greedy step) and their phases.
      for (const k of ["batchedSteps", "decodeMsPerStep", "sampleMsPerStep"])
        expect(w.kvgraft[k]).toBeGreaterThan(0);
      for (const k of ["gapMsPerStep", "lockMsPerStep", "prepareMsPerStep"])
        expect(w.kvgraft[k]).toBeGreaterThanOrEqual(0);
      expect(readdirSync(logs)).toContain(`kvgraft-${w.name}.log`);
    }
  });

  it("bounds the measured requests by --timeout-ms, not the deposits and warm-up before them", () => {
    // 1 ms: no request can be answered in it, and no deposit either (before 2026-12-07 the deposit
    // was aborted too, and the run ended with an internal error instead of its document).
    const { out, r } = serveAlone("--workloads", "hot-1", ...smallRun(), "--timeout-ms", "1");
    // nothing answered within 1 ms: exit 1, with the document of what happened
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).not.toContain("internal error");
    const doc = JSON.parse(readFileSync(out, "utf8")) as {
      workloads: Array<{
        blockTokens: number;
        kvgraft: { sent: number; ok: number; statuses: Record<string, number> };
      }>;
    };
    const side = doc.workloads[0]?.kvgraft;
    expect(doc.workloads[0]?.blockTokens).toBeGreaterThan(0);
    expect([side?.sent, side?.ok]).toEqual([8, 0]);
    expect(Object.values(side?.statuses ?? {}).reduce((a, b) => a + b, 0)).toBe(8);
  });

  it("warms every llama-server slot and reads its decode batch and prompt tokens from --metrics", () => {
    const dir = mkdtempSync(join(tmpdir(), "kvgraft-serve-cli-"));
    const log = join(dir, "stand-in.json");
    const r = runCli(
      [
        "bench",
        "serve",
        "--model",
        syntheticModel("tiny-llama"),
        "--llama-server",
        join(import.meta.dirname, "fixtures", "stand-in-llama-server.mjs"),
        "--workloads",
        "hot-1",
        ...smallRun(3),
        "--llama-cache-ram",
        "0",
        "--out",
        join(dir, "serve.json"),
      ],
      { STAND_IN_LOG: log },
    );
    expect(r.status, r.stderr).toBe(0);
    const seen = JSON.parse(readFileSync(log, "utf8")) as { args: string[]; mostAtOnce: number };
    expect(seen.args.join(" ")).toContain("--parallel 3 -c 1536 --cont-batching --metrics");
    // its host-memory prompt cache off, as asked (a slot's whole state saved per new prompt otherwise)
    expect(seen.args.join(" ")).toContain("--cache-ram 0");
    // the one block's prompt in all 3 slots at once before the window (one at a time fills one slot)
    expect(seen.mostAtOnce).toBe(3);
    const doc = JSON.parse(readFileSync(join(dir, "serve.json"), "utf8")) as {
      llamaCacheRamMiB: number | "default";
      workloads: Array<{ llamaServer: Record<string, number> }>;
    };
    expect(doc.llamaCacheRamMiB).toBe(0);
    const side = doc.workloads[0]?.llamaServer;
    expect([side?.sent, side?.ok, side?.tokensPerS && side.tokensPerS > 0]).toEqual([8, 8, true]);
    expect([side?.meanDecodeBatch, side?.promptTokensPerRequest]).toEqual([3, 10]);
    expect(r.stdout).toMatch(
      /\| hot-1 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| 3 \| 10 \|/,
    );
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
    const json = r.json as {
      grafts: number;
      tokensOut: number;
      meanBatch: number;
      wallMs: number;
      decodes: { batched: { steps: number } };
      decodeMsPerStep: number;
      sampleMsPerStep: number;
      context: { flashAttention: boolean; kvType: string; cellsPerSlot: number; cells: number };
      restores: { hits: Record<"hot" | "warm" | "cold", number> };
    };
    expect([json.grafts, json.tokensOut]).toEqual([4, 32]);
    // every graft's restore counted once, in the tier it came from
    const { hot, warm, cold } = json.restores.hits;
    expect(hot + warm + cold).toBe(4);
    expect(json.meanBatch).toBeGreaterThan(1);
    // Where the batched steps' wall time went: decode and sampling, within the run's wall time.
    expect(json.decodeMsPerStep).toBeGreaterThan(0);
    expect(json.sampleMsPerStep).toBeGreaterThan(0);
    expect((json.decodeMsPerStep + json.sampleMsPerStep) * json.decodes.batched.steps).toBeLessThanOrEqual(
      json.wallMs + 1,
    );
    expect(json.context).toMatchObject({ flashAttention: true, kvType: "f16", cellsPerSlot: 2048 });
    expect(json.context.cells).toBeGreaterThanOrEqual(4 * 2048);
  });
});
