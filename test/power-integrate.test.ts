/**
 * The energy arithmetic of gpu-node/telemetry/power.ts: what a window of samples integrates to,
 * clipped at the window's ends (the flywheel experiment charges each answer the joules of its own
 * time span of one sampler that runs for the whole experiment).
 */
import { describe, expect, it } from "vitest";
import { integratePower, type Sample } from "../gpu-node/telemetry/power.js";

const every50ms = (watts: (i: number) => number, n: number): Sample[] =>
  Array.from({ length: n }, (_, i) => ({ t: i * 50, watts: watts(i) }));

describe("integratePower", () => {
  it("gives watts times seconds at a constant draw, clipped to the window", () => {
    const samples = every50ms(() => 200, 41); // 0..2,000 ms at 200 W
    expect(integratePower(samples, -Infinity, Infinity)).toBeCloseTo(400, 9);
    expect(integratePower(samples, 500, 1500)).toBeCloseTo(200, 9);
    // A window inside one pair of samples still counts its share.
    expect(integratePower(samples, 510, 530)).toBeCloseTo(4, 9);
  });

  it("follows a ramp linearly between samples and gives nothing outside the samples", () => {
    const samples = every50ms((i) => 100 + i * 10, 21); // 100 W at 0 ms to 300 W at 1,000 ms
    expect(integratePower(samples, 0, 1000)).toBeCloseTo(200, 9);
    expect(integratePower(samples, 0, 500)).toBeCloseTo(75, 9); // mean 150 W over 0.5 s
    expect(integratePower(samples, 1000, 5000)).toBe(0);
    expect(integratePower(samples, 300, 300)).toBe(0);
    expect(integratePower([], 0, 1000)).toBe(0);
  });
});
