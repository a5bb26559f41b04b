import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { syntheticModel } from "./helpers/models.js";

describe("kvgraft bench graft (CPU smoke check, no timing assertions)", () => {
  it("prints a table and a JSON result whose every path hashes equal", () => {
    const r = runCli([
      "bench",
      "graft",
      "--model",
      syntheticModel("tiny-llama"),
      "--lengths",
      "64,300",
      "--kv",
      "f16,q8_0",
      "--runs",
      "1",
      "--json",
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /\| length \| KV \| path \| recompute ms .*\| probe check ms \| probe entries \| hashes equal \|/,
    );
    const json = r.json as { results: Array<Record<string, unknown>>; engine: { backend: string } };
    expect(json.engine.backend).toBe("cpu");
    expect(json.results.map((x) => [x.length, x.kv])).toEqual([
      [64, "f16"],
      [300, "f16"],
      [64, "q8_0"],
      [300, "q8_0"],
    ]);
    for (const row of json.results) {
      expect(row.hashesEqual).toBe(true);
      expect(row.probeEntries).toBe(1024);
      expect(row.stateBytes).toBeGreaterThan(0);
      for (const k of ["recomputeMs", "hotMs", "hotLibraryMs", "warmMs", "coldMs", "probeCheckMs"])
        expect(row[k]).toBeGreaterThan(0);
    }
  });

  it("rejects an unknown benchmark and bad KV types with usage errors", () => {
    expect(runCli(["bench", "nope"]).status).toBe(2);
    expect(runCli(["bench", "graft", "--model", "x.gguf", "--kv", "q4"]).status).toBe(2);
  });
});
