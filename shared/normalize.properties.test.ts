/**
 * Properties of normalization over generated problems (issue 24): a fixed point, number-preserving
 * (a rendered value always comes back as the same literals), case-preserving where case names
 * something, and never one fingerprint for two problems that mean different things.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DomainError } from "./errors.js";
import { MAX_LATEX_DEPTH } from "./latex.js";
import { normalizeProblem, problemFingerprint, problemTemplate } from "./normalize.js";

/** One piece of a generated problem: what it means, and one way of writing it. */
interface Piece {
  meaning: string;
  text: string;
  /** The exact literals normalization must report for it, in order. */
  literals: string[];
}

const VULGAR: Record<string, string> = {
  "1/2": "½",
  "1/4": "¼",
  "3/4": "¾",
  "1/3": "⅓",
  "2/3": "⅔",
  "5/8": "⅝",
};

const prose = fc
  .constantFrom(
    "what",
    "is",
    "the",
    "sum",
    "of",
    "apples",
    "costs",
    "hours",
    "minutes",
    "find",
    "larger",
    "value",
  )
  .chain((w) =>
    fc
      .constantFrom(w, w[0]?.toUpperCase() + w.slice(1))
      .map((text): Piece => ({ meaning: `w:${w}`, text, literals: [] })),
  );

const variable = fc
  .constantFrom(..."abcxyzABCXYZ".split(""))
  .chain((v) =>
    fc.constantFrom(v, `$${v}$`).map((text): Piece => ({ meaning: `v:${v}`, text, literals: [] })),
  );

const unit = fc
  .constantFrom("mA", "MA", "mm", "Mm", "ms", "Ms", "kg", "MHz", "mHz")
  .map((u): Piece => ({ meaning: `u:${u}`, text: u, literals: [] }));

const operator = fc
  .constantFrom<[string, string[]]>(["+", ["+", " + "]], ["=", ["=", " = "]], ["*", ["*", " × ", "\\times"]])
  .chain(([op, forms]) =>
    fc.constantFrom(...forms).map((text): Piece => ({ meaning: `o:${op}`, text, literals: [] })),
  );

const withThousands = (n: bigint) => n.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");

const integer = fc
  .bigInt({ min: 0n, max: 10n ** 30n })
  .chain((n) =>
    fc
      .constantFrom(n.toString(), withThousands(n), `$${n}`, withThousands(n).replaceAll(",", "{,}"))
      .map((text): Piece => ({ meaning: `n:${n}`, text, literals: [n.toString()] })),
  );

const decimal = fc
  .tuple(
    fc.nat({ max: 9999 }),
    fc.integer({ min: 1, max: 999 }).filter((f) => f % 10 !== 0),
  )
  .chain(([whole, frac]) => {
    const value = `${whole}.${frac}`;
    return fc
      .constantFrom(value, `${value}0`, whole === 0 ? `.${frac}` : value)
      .map((text): Piece => ({ meaning: `d:${value}`, text, literals: [value] }));
  });

const fraction = fc.constantFrom(...Object.keys(VULGAR)).chain((f) => {
  const [num, den] = f.split("/") as [string, string];
  return fc
    .constantFrom(VULGAR[f] as string, f, `\\frac{${num}}{${den}}`)
    .map((text): Piece => ({ meaning: `f:${f}`, text, literals: [num, den] }));
});

const slashFraction = fc
  .tuple(fc.integer({ min: 1, max: 999 }), fc.integer({ min: 2, max: 999 }))
  .chain(([a, b]) =>
    fc
      .constantFrom(`${a}/${b}`, `\\frac{${a}}{${b}}`)
      .map((text): Piece => ({ meaning: `f:${a}/${b}`, text, literals: [String(a), String(b)] })),
  );

const mixed = fc
  .tuple(fc.integer({ min: 1, max: 99 }), fc.constantFrom(...Object.keys(VULGAR)))
  .chain(([w, f]) => {
    const [num, den] = f.split("/") as [string, string];
    return fc
      .constantFrom(`${w}${VULGAR[f]}`, `${w} ${VULGAR[f]}`, `${w} ${f}`, `${w}\\frac{${num}}{${den}}`)
      .map((text): Piece => ({ meaning: `m:${w}+${f}`, text, literals: [String(w), num, den] }));
  });

const negative = fc
  .integer({ min: 1, max: 10_000 })
  .chain((n) =>
    fc
      .constantFrom(`= -${n}`, `= −${n}`, `=-${n}`)
      .map((text): Piece => ({ meaning: `o:= n:-${n}`, text, literals: [`-${n}`] })),
  );

const number = fc.oneof(integer, decimal, fraction, slashFraction, mixed, negative);
const word = fc.oneof(prose, prose, variable, unit, operator);

/**
 * A problem: words, with a number after some of them; never two numbers in a row (`3 ¾` is a
 * mixed number).
 */
const ambiguousArticle = (pieces: Piece[]) =>
  // A lone `a`/`A` before a word reads as the article (`A train`): no text can say which it is.
  pieces.some((p, i) => /^v:a$/i.test(p.meaning) && /^[wu]:/.test(pieces[i + 1]?.meaning ?? ""));

const pieceList = fc
  .array(fc.tuple(word, fc.option(number, { freq: 2 })), { minLength: 1, maxLength: 12 })
  .map((pairs) => pairs.flatMap(([w, n]) => (n ? [w, n] : [w])))
  .filter((pieces) => !ambiguousArticle(pieces));

const render = (pieces: Piece[], end: string) => ({
  text: `${pieces.map((p) => p.text).join(" ")}${end}`,
  meaning: pieces.map((p) => p.meaning).join(" "),
  literals: pieces.flatMap((p) => p.literals),
});

const ending = fc.constantFrom("", ".", "?");

/** A problem: words, with a number after some of them; never two numbers in a row (`3 ¾` is a mixed number). */
const problem = fc.tuple(pieceList, ending).map(([pieces, end]) => render(pieces, end));

/** Two problems that differ in one piece (a number, a name's case, an operator), written independently. */
const nearPair = fc
  .tuple(pieceList, fc.nat(), ending, ending)
  .chain(([pieces, at, endA, endB]) => {
    const i = at % pieces.length;
    const replacement = /^[nmdf]/.test((pieces[i] as Piece).meaning) ? number : word;
    return replacement.map(
      (piece) => [pieces, pieces.map((p, j) => (j === i ? piece : p)), endA, endB] as const,
    );
  })
  .filter(([, other]) => !ambiguousArticle(other))
  .map(([pieces, other, endA, endB]) => [render(pieces, endA), render(other, endB)] as const)
  .filter(([a, b]) => a.meaning !== b.meaning);

describe("normalization properties over generated problems", () => {
  it("is a fixed point: normalizing the normal form changes nothing", () => {
    fc.assert(
      fc.property(problem, ({ text }) => {
        const once = normalizeProblem(text);
        expect(normalizeProblem(once)).toBe(once);
      }),
      { numRuns: 3000 },
    );
  });

  it("preserves every number's value: the literals are the generated values, in order", () => {
    fc.assert(
      fc.property(problem, ({ text, literals }) => {
        expect(problemTemplate(text).literals).toEqual(literals);
      }),
      { numRuns: 3000 },
    );
  });

  it("never gives two problems that mean different things one normal form", () => {
    fc.assert(
      fc.property(nearPair, ([a, b]) => {
        expect(normalizeProblem(a.text)).not.toBe(normalizeProblem(b.text));
      }),
      { numRuns: 5000 },
    );
  });

  it("keeps the case of variables and units: swapping one's case changes the normal form", () => {
    fc.assert(
      fc.property(problem, fc.nat(), (p, pick) => {
        const names = [
          ...p.text.matchAll(/(?<![A-Za-z\\])(?:[a-cxyzA-CXYZ]|mA|MA|mm|Mm|ms|Ms|MHz|mHz)(?![A-Za-z])/g),
        ];
        fc.pre(names.length > 0);
        const m = names[pick % names.length] as RegExpExecArray;
        const swapped = [...m[0]]
          .map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()))
          .join("");
        const other = p.text.slice(0, m.index) + swapped + p.text.slice(m.index + m[0].length);
        expect(normalizeProblem(other)).not.toBe(normalizeProblem(p.text));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("the collision pairs of issue 24", () => {
  const pairs: [string, string][] = [
    ["What is 33/4 hours in minutes?", "What is 3¾ hours in minutes?"],
    ["Let A = 5 and a = 3. What is A?", "Let a = 5 and A = 3. What is A?"],
    ["A current of 5 mA", "A current of 5 MA"],
    ["What is $\\Gamma(5)$?", "What is $\\gamma(5)$?"],
    ["x = 2 1/2", "x = 21/2"],
    ["Take 1³⁄₄ cups", "Take 13/4 cups"],
  ];
  it.each(pairs)("%j and %j have different fingerprints", async (a, b) => {
    expect(await problemFingerprint(a)).not.toBe(await problemFingerprint(b));
  });

  it("writes a mixed number with a space, so its value is kept", () => {
    expect(normalizeProblem("What is 3¾ hours in minutes?")).toBe("What is 3 3/4 hours in minutes");
    expect(problemTemplate("What is 3¾ hours in minutes?").literals).toEqual(["3", "3", "4"]);
  });

  it("merges formatting only, never case (issue 35)", () => {
    expect(normalizeProblem("A jacket costs $80.")).toBe(normalizeProblem("A jacket costs 80"));
    expect(normalizeProblem("What is GCD(12, 18)?")).toBe(normalizeProblem("What is GCD(12,18)"));
    expect(normalizeProblem("In how many ways")).not.toBe(normalizeProblem("in how many ways"));
    expect(normalizeProblem("What is GCD(12, 18)?")).not.toBe(normalizeProblem("What is gcd(12, 18)?"));
  });
});

describe("LaTeX nesting limit", () => {
  const nested = (depth: number) => `${"{".repeat(depth)}x${"}".repeat(depth)}`;

  it("refuses 9,000 nested braces with a 400 problem_too_nested, not a stack overflow", () => {
    let thrown: unknown;
    try {
      normalizeProblem(nested(9000));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(DomainError);
    expect((thrown as DomainError).status).toBe(400);
    expect((thrown as DomainError).code).toBe("problem_too_nested");
  });

  it("accepts nesting up to the limit", () => {
    expect(normalizeProblem(nested(MAX_LATEX_DEPTH))).toBe(
      `${"{".repeat(MAX_LATEX_DEPTH)}x${"}".repeat(MAX_LATEX_DEPTH)}`,
    );
    expect(() => normalizeProblem(nested(MAX_LATEX_DEPTH + 1))).toThrow(DomainError);
  });
});
