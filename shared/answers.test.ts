import { describe, expect, it } from "vitest";
import { answersEqual, extractAnswer } from "./answers.js";

describe("answersEqual", () => {
  it.each([
    ["0.50", "0.5"],
    ["1,000", "1000"],
    ["1e3", "1000"],
    ["3/4", "0.75"],
    [" 42 \n", "42"],
    ["-7", "-7.0"],
    ["+5", "5"],
    ["1,234,567.5", "1234567.5"],
    ["0.1", "0.10000000000000001"],
    ["1/3", "0.333333333333333"],
    ["Yes", "yes"],
    ["x =  2\t y", "X = 2 y"],
  ])("%j equals %j", (a, b) => {
    expect(answersEqual(a, b)).toBe(true);
    expect(answersEqual(b, a)).toBe(true);
  });

  it.each([
    ["0.5", "0.51"],
    ["1000", "1001"],
    ["3/4", "0.7"],
    ["12345678901234567890", "12345678901234567891"],
    ["1/0", "0"],
    ["yes", "no"],
    ["1,00", "100"],
    ["", "0"],
  ])("%j differs from %j", (a, b) => {
    expect(answersEqual(a, b)).toBe(false);
    expect(answersEqual(b, a)).toBe(false);
  });

  it("uses a relative tolerance, not an absolute one", () => {
    expect(answersEqual("1e12", "1000000000000.0005")).toBe(true);
    expect(answersEqual("1e-12", "2e-12")).toBe(false);
  });
});

describe("extractAnswer", () => {
  it("takes the last non-empty line, trimmed", () => {
    expect(extractAnswer("working...\n  17  \n\n\r\n")).toBe("17");
    expect(extractAnswer("a\r\nb\r\n")).toBe("b");
  });

  it("is null without output", () => {
    expect(extractAnswer("")).toBeNull();
    expect(extractAnswer(" \n\n")).toBeNull();
  });
});
