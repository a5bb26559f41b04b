import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { syntheticModel } from "./helpers/models.js";

describe("kvgraft verify", () => {
  it("prints the report as the last JSON line and exits 0 when every trial is equal", () => {
    const r = runCli([
      "verify",
      "--model",
      syntheticModel("tiny-gemma3"),
      "--trials",
      "5",
      "--tokens",
      "400",
      "--shift",
      "8",
      "--json",
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json).toMatchObject({
      trials: 5,
      shaEqual: 5,
      klMedian: 0,
      klP99: 0,
      argmaxAgreement: 1,
      probeEntries: 1024,
      vocabSize: 1024,
      shift: 8,
      model: { architecture: "gemma3" },
      engine: { nodeLlamaCpp: "3.21.1", backend: "cpu" },
    });
    const report = r.json as { stateBytes: number; prefillMs: number; restoreMs: number; shiftKl: number };
    expect(report.stateBytes).toBeGreaterThan(0);
    expect(report.shiftKl).toBeGreaterThanOrEqual(0);
  });

  it("gives a usage error for a missing model flag and a clear error for a missing file", () => {
    expect(runCli(["verify"]).status).toBe(2);
    const r = runCli(["verify", "--model", "/nonexistent/model.gguf"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      "kvgraft verify: --model /nonexistent/model.gguf does not exist; give the path of a GGUF model file\n",
    );
  });
});
