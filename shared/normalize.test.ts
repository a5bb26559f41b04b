import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "./hash.js";
import { normalizeProblem, problemFingerprint, problemTemplate } from "./normalize.js";

/** Pairs that must normalize to the same text. */
const equivalent: [string, string][] = [
  ["What is 2+2?", "what is 2 + 2 ?"],
  ["What is 2+2?", "  WHAT   is 2+2  "],
  ["Find $\\frac{1}{2} \\cdot 10$.", "find 1/2 * 10"],
  ["Find $\\dfrac{3}{4}\\times 8$", "Find 3/4 × 8"],
  ["Solve $x^{2} - 5x + 6 = 0$.", "solve x^2 - 5x + 6 = 0"],
  ["Solve x² − 5x + 6 = 0", "solve x^2 - 5x + 6 = 0"],
  ["Solve x**2 - 5x + 6 = 0", "solve x^2 - 5x + 6 = 0"],
  ["\\(\\sqrt{16} + 2^{10}\\)", "sqrt(16) + 2^10"],
  ["$$\\left(\\frac{x+1}{2}\\right)^{2}$$", "((x+1)/2)^2"],
  ["He pays with a \\$1{,}000 bill.", "He pays with a $1,000 bill"],
  ["He has 1\\,000 apples", "he has 1000 apples"],
  ["An angle of $90^\\circ$", "an angle of 90°"],
  ["An angle of $90^{\\circ}$", "an angle of 90 degrees"],
  ["$x \\le 3$ and $y \\neq 4$", "x ≤ 3 and y ≠ 4"],
  ["The area is $\\pi r^2$", "the area is π r^2"],
  ["Is $\\text{gcd}(12, 18)$ even?", "is gcd(12,18) even"],
  ["Find $\\sqrt{2}$", "Find √2"],
  ["Take $\\frac{1}{2}x$", "take (1/2)x"],
  ["a 50\\% discount", "a 50 % discount"],
  ["Ｆｉｎｄ １２＋３", "find 12+3"],
  ["What is 7 \\bmod 3", "what is 7 mod 3"],
];

describe("normalizeProblem", () => {
  it.each(equivalent)("%j and %j agree", (a, b) => {
    expect(normalizeProblem(a)).toBe(normalizeProblem(b));
  });

  it("produces the plain form a person would type", () => {
    expect(normalizeProblem("What is 2+2?")).toBe("what is 2+2");
    expect(normalizeProblem("Find $\\frac{1}{2} \\cdot 10$.")).toBe("find 1/2*10");
    expect(normalizeProblem("$\\frac{x+1}{2y}$")).toBe("(x+1)/(2y)");
    expect(normalizeProblem("$\\sqrt[3]{8}$")).toBe("8^(1/3)");
    expect(normalizeProblem("$2\\frac{1}{2}$ cups")).toBe("2 1/2 cups");
    expect(normalizeProblem("$\\binom{10}{3}$")).toBe("binom(10, 3)");
  });

  it("canonicalizes numbers", () => {
    expect(normalizeProblem("1,000 and 12,345.60 and 1,000,000")).toBe("1000 and 12345.6 and 1000000");
    expect(normalizeProblem("0.50 and 3.0 and 3.000 and 007 and .5")).toBe("0.5 and 3 and 3 and 7 and 0.5");
    expect(normalizeProblem("It costs 3.")).toBe("it costs 3");
    expect(normalizeProblem("x = -0 and y = -0.00")).toBe("x=0 and y=0");
    expect(normalizeProblem("x = -3")).toBe("x=-3");
  });

  it("keeps commas that separate arguments or list items", () => {
    expect(normalizeProblem("gcd(120,180)")).toBe("gcd(120, 180)");
    expect(normalizeProblem("the numbers 1,2,3")).toBe("the numbers 1, 2, 3");
    expect(normalizeProblem("values 1, 000")).toBe("values 1, 0");
    expect(normalizeProblem("from (100,200) to [1,000]")).toBe("from (100, 200) to [1, 0]");
  });

  it("reads thousands separators in prose inside parentheses", () => {
    expect(normalizeProblem("(1 cubic meter = 1,000 liters)")).toBe("(1 cubic meter=1000 liters)");
  });

  it("keeps meaningful parentheses and factorials", () => {
    expect(normalizeProblem("(-3)^2")).toBe("(-3)^2");
    expect(normalizeProblem("f(x) + 2(3)")).toBe("f(x)+2(3)");
    expect(normalizeProblem("(1)/(2)")).toBe("1/2");
    expect(normalizeProblem("Compute 5!")).toBe("compute 5!");
  });

  it("tells different problems apart", () => {
    expect(normalizeProblem("What is 2+3?")).not.toBe(normalizeProblem("What is 2+2?"));
    expect(normalizeProblem("x^2")).not.toBe(normalizeProblem("x2"));
    expect(normalizeProblem("(-3)^2")).not.toBe(normalizeProblem("-3^2"));
    expect(normalizeProblem("5 - 3")).not.toBe(normalizeProblem("5 -3"));
  });

  it("is idempotent on the examples", () => {
    for (const [a, b] of equivalent) {
      expect(normalizeProblem(normalizeProblem(a))).toBe(normalizeProblem(a));
      expect(normalizeProblem(normalizeProblem(b))).toBe(normalizeProblem(b));
    }
  });
});

describe("problemFingerprint", () => {
  it("is the SHA-256 of the normalized text and equal across formats", async () => {
    const fp = await problemFingerprint("What is 2+2?");
    expect(fp).toBe(await sha256Hex("what is 2+2"));
    expect(await problemFingerprint("what is 2 + 2 ?")).toBe(fp);
    expect(await problemFingerprint("what is 2 + 3 ?")).not.toBe(fp);
  });
});

describe("problemTemplate", () => {
  it("replaces numbers by slots and lists them in order", () => {
    expect(problemTemplate("A train travels 120 km in 1.50 hours. What is its speed?")).toEqual({
      template: "a train travels # km in # hours. what is its speed",
      params: [120, 1.5],
      literals: ["120", "1.5"],
    });
  });

  it("gives one template for the same wording with new numbers", () => {
    const a = problemTemplate("Sam buys 12 apples at $0.75 each and pays with a $20 bill.");
    const b = problemTemplate("Sam buys 7 apples at \\$1.25 each and pays with a \\$1{,}000 bill");
    expect(a.template).toBe(b.template);
    expect(a.params).toEqual([12, 0.75, 20]);
    expect(b.params).toEqual([7, 1.25, 1000]);
  });

  it("keeps a sign in the parameter and a binary minus in the template", () => {
    expect(problemTemplate("Solve x^2 - 5x + 6 = 0")).toEqual({
      template: "solve x^#-#x+#=#",
      params: [2, 5, 6, 0],
      literals: ["2", "5", "6", "0"],
    });
    expect(problemTemplate("If x = -4, what is x - 2?")).toEqual({
      template: "if x=#, what is x-#",
      params: [-4, 2],
      literals: ["-4", "2"],
    });
  });

  it("treats digits inside words as numbers", () => {
    expect(problemTemplate("log2 of x3 for the 10th term")).toEqual({
      template: "log# of x# for the #th term",
      params: [2, 3, 10],
      literals: ["2", "3", "10"],
    });
    expect(problemTemplate("version 1.02.3")).toEqual({
      template: "version #.#.#",
      params: [1, 2, 3],
      literals: ["1", "2", "3"],
    });
  });

  it("has no slots for a problem without numbers", () => {
    expect(problemTemplate("Why is the sky blue?")).toEqual({
      template: "why is the sky blue",
      params: [],
      literals: [],
    });
  });
});

/** Strings built from the characters the rules react to, so the properties reach the edge cases. */
const tricky = fc
  .array(
    fc.constantFrom(
      ..."0123456789.,-+*/^_=<>~!?:;()[]{}$\\ %#xaZ²⁻₂√×−–°π".split(""),
      "\\frac",
      "\\sqrt",
      "\\left",
      "\\right",
      "\\cdot",
      "\\text",
      "\\circ",
      "\\,",
      "{,}",
      "**",
      "  ",
      "\n",
      "1,000",
      "0.50",
      "-0",
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(""));

describe("properties", () => {
  it("normalize is idempotent", () => {
    fc.assert(
      fc.property(fc.oneof(tricky, fc.string({ unit: "grapheme", maxLength: 60 })), (s) => {
        const once = normalizeProblem(s);
        expect(normalizeProblem(once)).toBe(once);
      }),
      { numRuns: 3000 },
    );
  });

  it("a template never contains a digit and has one slot per parameter", () => {
    fc.assert(
      fc.property(fc.oneof(tricky, fc.string({ unit: "grapheme", maxLength: 60 })), (s) => {
        const { template, params } = problemTemplate(s);
        expect(template).not.toMatch(/[0-9]/);
        expect(params.every((p) => Number.isFinite(p))).toBe(true);
        const hashes = (t: string) => t.split("#").length - 1;
        expect(hashes(template)).toBe(params.length + hashes(normalizeProblem(s)));
      }),
      { numRuns: 3000 },
    );
  });

  it("a template is stable under renumbering with other non-negative integers", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("a train", "goes", "km in", "hours and", "with", "x^", "+", "=", "apples"), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.array(fc.nat({ max: 100000 }), { minLength: 8, maxLength: 8 }),
        fc.array(fc.nat({ max: 100000 }), { minLength: 8, maxLength: 8 }),
        (words, xs, ys) => {
          const build = (nums: number[]) => words.map((w, i) => `${w} ${nums[i]}`).join(" ");
          const a = problemTemplate(build(xs));
          const b = problemTemplate(build(ys));
          expect(a.template).toBe(b.template);
          expect(a.params).toEqual(xs.slice(0, words.length));
          expect(b.params).toEqual(ys.slice(0, words.length));
        },
      ),
    );
  });
});
