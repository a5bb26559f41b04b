/** The independent checks of transferred answers (edge/routing/answer-checks.ts), on normalized problems. */
import { describe, expect, it } from "vitest";
import { checkAnswer } from "../edge/routing/answer-checks.js";
import { normalizeProblem, problemTemplate } from "../shared/normalize.js";

function check(problem: string, answer: string) {
  const normalized = normalizeProblem(problem);
  const { template, literals } = problemTemplate(normalized);
  return checkAnswer(normalized, template, literals, answer);
}

describe("checkAnswer", () => {
  it.each([
    ["Find the larger root of the equation x^2 - 5x + 6 = 0.", "3", true],
    ["Find the larger root of the equation x^2 - 5x + 6 = 0.", "2", false],
    ["Find the smaller root of the equation x^2 - 5x + 6 = 0.", "2", true],
    ["Find the larger root of the equation x^2 - 5x + 5 = 0.", "3.62", true],
    ["Find the larger root of the equation x^2 - 5x + 5 = 0.", "3.6", false],
    ["Find the larger root of the equation x^3 - 5x + 6 = 0.", "3", false],
    ["Solve $2y - 8 = 0$ for y.", "4", true],
    ["Solve $2y - 8 = 0$ for y.", "5", false],
  ])("roots: %j answered %j -> %s", (problem, answer, ok) => {
    expect(check(problem, answer)).toEqual({ check: "root_substituted", ok });
  });

  it.each([
    ["What is the greatest common divisor of 84 and 126?", "42", true],
    ["What is the greatest common divisor of 84 and 127?", "42", false],
    ["What is gcd(-12, 18)?", "6", true],
    ["What is the greatest common divisor of 84 and 126?", "21", false],
  ])("gcd: %j answered %j -> %s", (problem, answer, ok) => {
    expect(check(problem, answer)).toEqual({ check: "gcd_checked", ok });
  });

  it("recomputes a power's remainder exactly", () => {
    const problem = "What is the remainder when 7^100 is divided by 12345678901234567891?";
    expect(check(problem, "9129465793113485109")).toEqual({ check: "power_mod_recomputed", ok: true });
    // What a float-rounded 12345678901234567891 gave (issue 24).
    expect(check(problem, "1997707958153272001")).toEqual({ check: "power_mod_recomputed", ok: false });
  });

  it("has no check where the problem's shape gives none", () => {
    expect(check("Solve the system 2x + 3y = 13 and 4x - y = 5. What is the value of x?", "2")).toBeNull();
    expect(check("Find the sum of the roots of x^2 - 5x + 6 = 0.", "5")).toBeNull();
    expect(check("What is the greatest common divisor of 84 and 126.5?", "42")).toBeNull();
    expect(check("Sam buys 12 apples at $0.75 each. How much does he pay?", "9")).toBeNull();
  });
});
