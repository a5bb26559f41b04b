/**
 * The verified answer's domain (edge/routing/answer-domain.ts, issue 35): what a deposit records
 * from the answer and its probe runs, and which transferred answers fall outside it.
 */
import { describe, expect, it } from "vitest";
import { answerDomain, countsThings, outsideDomain } from "../edge/routing/answer-domain.js";
import type { ParamProfile } from "../shared/params.js";
import { scaleLiteral, shrinkLiteral } from "../shared/params.js";

const read = (literals: string[]): ParamProfile => ({
  version: 1,
  params: literals.map((literal) => ({
    literal,
    kind: literal.includes(".") ? "decimal" : "integer",
    sign: "positive",
    role: "read",
  })),
});

describe("answerDomain", () => {
  // Sam buys 12 apples at $0.75 and pays $20: change = paid - count * price, and its probe runs.
  const apples = ["12", "0.75", "20"];
  const change = (c: number, p: number, paid: number) => ({
    params: [String(c), String(p), String(paid)],
    answer: String(Math.round((paid - c * p) * 100) / 100),
  });
  const runs = [
    change(13, 0.75, 20),
    change(14, 0.75, 20),
    change(24, 0.75, 20),
    change(120, 0.75, 20),
    change(12, 1.75, 20),
    change(12, 2.75, 20),
    change(12, 1.5, 20),
    change(12, 7.5, 20),
    change(12, 0.75, 21),
    change(12, 0.75, 22),
    change(12, 0.75, 40),
    change(12, 0.75, 200),
  ];
  const text = "Sam buys 12 apples at 0.75 each and pays with a 20 bill. How much change does he get";
  const domain = answerDomain(text, apples, "11", read(apples), runs);

  it("records the sign, no integer (a probe printed 10.25) and the change at most the amount paid", () => {
    expect(domain).toEqual({
      version: 1,
      signs: ["positive"],
      integer: false,
      bounds: [{ param: 2, relation: "atMost" }],
    });
  });

  it("refuses the red team's answers and keeps right ones", () => {
    expect(outsideDomain(domain, ["12", "0.75", "5"], "-4")).toMatch(/negative/);
    expect(outsideDomain(domain, ["30", "0.75", "20"], "-2.5")).toMatch(/negative/);
    expect(outsideDomain(domain, ["12", "0.5", "10"], "4")).toBeNull();
    expect(outsideDomain(domain, ["10", "0.8", "20"], "12")).toBeNull();
    expect(outsideDomain(domain, ["1", "0.5", "10"], "11")).toMatch(/more than number 3/);
  });

  it("requires an integer where every probe printed one, or where the question counts", () => {
    const ways = answerDomain(
      "In how many ways can 3 be chosen from 10",
      ["3", "10"],
      "120",
      read(["3", "10"]),
      [{ params: ["4", "10"], answer: "210" }],
    );
    expect(ways?.integer).toBe(true);
    expect(outsideDomain(ways, ["3", "12"], "220.5")).toMatch(/not an integer/);
    const teams = answerDomain(
      "A class of 30 students is split into teams of 5. How many teams are there",
      ["30", "5"],
      "6",
      read(["30", "5"]),
      [{ params: ["31", "5"], answer: "6.2" }],
    );
    expect(teams?.integer).toBe(true);
    const hours = answerDomain("How many hours will it take them", ["6", "3"], "2", read(["6", "3"]), [
      { params: ["7", "3"], answer: "2.1" },
    ]);
    expect(hours?.integer).toBe(false);
  });

  it("derives a domain without probe runs from the answer and numbers alone (integer when all are)", () => {
    expect(answerDomain("What is 2 plus 3", ["2", "3"], "5", null, null)).toEqual({
      version: 1,
      signs: ["positive"],
      integer: true,
      bounds: [],
    });
    expect(answerDomain("What is 2.5 plus 3", ["2.5", "3"], "5.5", null, null)?.integer).toBe(false);
  });

  it("has no domain for an answer that is not a plain number, and refuses every transfer of it", () => {
    const none = answerDomain("Solve it", ["1"], "x = 3", read(["1"]), []);
    expect(none).toBeNull();
    expect(outsideDomain(none, ["2"], "3")).toMatch(/not a plain number/);
  });

  it("compares every value of a list and of a fraction", () => {
    const d = answerDomain("Roots of", ["1"], "2, 3", read(["1"]), []);
    expect(outsideDomain(d, ["2"], "4, -1")).toMatch(/negative/);
    const p = answerDomain("Probability", ["6"], "5/36", read(["6"]), []);
    expect(outsideDomain(p, ["8"], "0")).toMatch(/zero/);
    expect(outsideDomain(p, ["8"], "7/64")).toBeNull();
  });
});

describe("countsThings", () => {
  it.each([
    ["How many teams are there", true],
    ["In how many ways can they sit", true],
    ["How many hours will it take", false],
    ["How many kilojoules is that", false],
    ["How many km is it", false],
    ["How many times larger is it", false],
    ["What is the area", false],
  ])("%j: %s", (text, counts) => {
    expect(countsThings(text)).toBe(counts);
  });
});

describe("scaleLiteral", () => {
  it.each([
    ["12", 2, "24"],
    ["0.75", 2, "1.5"],
    ["0.75", 10, "7.5"],
    ["-4", 10, "-40"],
    ["0.05", 10, "0.5"],
    ["123456789012345678901234567890", 10, "1234567890123456789012345678900"],
  ])("%s x %d = %s", (literal, factor, out) => {
    expect(scaleLiteral(literal, factor)).toBe(out);
  });
});

describe("shrinkLiteral", () => {
  it.each([
    ["240", 10, "24"],
    ["35", 2, "17"],
    ["5", 10, null],
    ["-45", 10, "-4"],
    ["0.75", 2, "0.375"],
    ["0.75", 10, "0.075"],
    ["12.5", 10, "1.25"],
    ["-3.5", 2, "-1.75"],
  ] as const)("%s / %d = %s", (literal, divisor, out) => {
    expect(shrinkLiteral(literal, divisor)).toBe(out);
  });
});
