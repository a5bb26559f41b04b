/**
 * The PARAMS line (gpu-node/sandbox/params.ts): exact literals only, nothing that could carry
 * code, and integers of any size exact through the real sandbox.
 */
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { paramsLine } from "../gpu-node/sandbox/params.js";
import { Sandbox } from "../gpu-node/sandbox/sandbox.js";
import { DomainError } from "../shared/errors.js";
import { BACKENDS } from "./helpers/sandbox.js";

describe("paramsLine", () => {
  it("writes literals as they are and plain numbers as JSON", () => {
    expect(paramsLine(["12", "-0.75", "123456789012345678901234567890"])).toBe(
      "PARAMS = [12,-0.75,123456789012345678901234567890]",
    );
    expect(paramsLine([40, 2.5])).toBe("PARAMS = [40,2.5]");
    expect(paramsLine(undefined)).toBe("PARAMS = []");
  });

  it.each([
    [["1]\nimport os\nx = [1"]],
    [["007"]],
    [["1e5"]],
    [[Number.NaN]],
    [[Number.POSITIVE_INFINITY]],
    [["1".repeat(1002)]],
    [[{ toString: () => "1" }]],
  ])("refuses %j with 400 invalid_params", (params) => {
    expect(() => paramsLine(params as never)).toThrow(DomainError);
    try {
      paramsLine(params as never);
    } catch (err) {
      expect(err).toMatchObject({ status: 400, code: "invalid_params" });
    }
  });
});

describe.each(BACKENDS)("big integers through the sandbox on $mode", ({ mode, skip }) => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    if (skip === null) sandbox = await Sandbox.create({ backend: mode });
  }, 60_000);
  afterAll(() => sandbox?.close());
  beforeEach((ctx) => ctx.skip(skip !== null, skip ?? undefined));

  it("computes exactly on integers of up to 1,000 digits and on exact decimals", async () => {
    const samples = fc.sample(fc.bigInt({ min: -(10n ** 999n), max: 10n ** 999n }), { numRuns: 5, seed: 24 });
    for (const n of samples) {
      const r = await sandbox.run({
        source: "print(PARAMS[0] * 3 + PARAMS[1])",
        params: [n.toString(), "7"],
      });
      expect(r.verdict, r.stderr).toBe("ok");
      expect(r.answer).toBe((n * 3n + 7n).toString());
    }
    const d = await sandbox.run({
      source: "print(repr(PARAMS[0]), type(PARAMS[1]).__name__)",
      params: ["0.1", "5"],
    });
    expect(d.answer).toBe("0.1 int");
  }, 60_000);
});
