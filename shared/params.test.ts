import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type ParamProfile,
  type ParamSpec,
  paramKind,
  paramSign,
  perturbLiteral,
  transferParams,
} from "./params.js";

const literalUpTo = (max: bigint) =>
  fc
    .tuple(fc.boolean(), fc.bigInt({ min: 0n, max }), fc.option(fc.stringMatching(/^\d{0,5}[1-9]$/)))
    .map(([negative, whole, fraction]) => {
      const text = fraction === null ? whole.toString() : `${whole}.${fraction}`;
      return negative && !/^0(?:\.0+)?$/.test(text) ? `-${text}` : text;
    });
const literal = literalUpTo(10n ** 400n);

const spec = (literal: string, role: ParamSpec["role"] = "read"): ParamSpec => ({
  literal,
  kind: paramKind(literal),
  sign: paramSign(literal),
  role,
});
const profile = (...params: ParamSpec[]): ParamProfile => ({ version: 1, params });

describe("perturbLiteral", () => {
  it("moves away from zero within the sign, exactly, keeping the kind", () => {
    fc.assert(
      fc.property(literal, fc.integer({ min: 1, max: 3 }), (l, step) => {
        const moved = perturbLiteral(l, step);
        expect(moved).not.toBe(l);
        expect(paramKind(moved)).toBe(paramKind(l));
        if (paramSign(l) !== "zero") expect(paramSign(moved)).toBe(paramSign(l));
        const whole = (s: string) => BigInt(s.split(".")[0] as string);
        const delta = whole(moved) - whole(l);
        expect(delta < 0n ? -delta : delta).toBe(BigInt(step));
      }),
    );
    expect(perturbLiteral("0.75", 1)).toBe("1.75");
    expect(perturbLiteral("-4", 2)).toBe("-6");
    expect(perturbLiteral("0", 1)).toBe("1");
  });
});

describe("transferParams", () => {
  it("passes numbers of the verified kind, sign and role through unchanged", () => {
    expect(transferParams(profile(spec("12"), spec("0.75"), spec("20")), ["7", "1.25", "50"])).toEqual({
      ok: true,
      params: ["7", "1.25", "50"],
    });
  });

  it("passes an integer for a decimal parameter as a decimal", () => {
    expect(transferParams(profile(spec("0.75")), ["1"])).toEqual({ ok: true, params: ["1.0"] });
  });

  it.each([
    [profile(spec("2", "ignored"), spec("5")), ["3", "5"], "param_not_modelled", 0],
    [profile(spec("84"), spec("126")), ["84", "126.5"], "param_kind", 1],
    [profile(spec("84"), spec("126")), ["84", "-126"], "param_sign", 1],
    [profile(spec("6"), spec("0")), ["6", "2"], "param_sign", 1],
    [profile(spec("0.75")), ["0.1234567890123456"], "param_precision", 0],
    [profile(spec("1"), spec("2")), ["1"], "param_count", null],
    [null, ["1"], "no_param_profile", null],
  ] as const)("refuses %j on %j: %s", (p, literals, code, param) => {
    expect(transferParams(p, literals)).toMatchObject({ ok: false, refusal: { code, param } });
  });

  it("accepts only queries whose every number fits its deposit spec", () => {
    const role = fc.constantFrom("read", "ignored") as fc.Arbitrary<ParamSpec["role"]>;
    // Queries from the deposit's numbers, some replaced: a move within the sign, or any literal.
    const depositAndQuery = fc
      .array(fc.tuple(literalUpTo(10n ** 6n), role), { minLength: 1, maxLength: 6 })
      .chain((deposit) =>
        fc
          .tuple(
            ...deposit.map(([l]) =>
              fc.oneof(
                { arbitrary: fc.constant(l), weight: 3 },
                { arbitrary: fc.constant(perturbLiteral(l, 1)), weight: 3 },
                literal,
              ),
            ),
          )
          .map((query) => [deposit, query] as const),
      );
    let accepted = 0;
    fc.assert(
      fc.property(depositAndQuery, ([deposit, query]) => {
        const p = profile(...deposit.map(([l, r]) => spec(l, r)));
        const r = transferParams(p, query);
        if (!r.ok) return;
        accepted++;
        for (const [i, s] of p.params.entries()) {
          const q = query[i] as string;
          if (s.role === "ignored") expect(q).toBe(s.literal);
          expect(paramSign(q)).toBe(s.sign);
          if (s.kind === "integer") expect(paramKind(q)).toBe("integer");
          expect(paramKind(r.params[i] as string)).toBe(s.kind);
        }
      }),
      { numRuns: 2000 },
    );
    expect(accepted).toBeGreaterThan(200);
  });
});
