/**
 * `kvgraft bench fast-path` as a user runs it (a real subprocess): a Node edge on loopback with a
 * libSQL file, one verified library problem solved over HTTP, and a stand-in GPU node that must
 * get no request. Bad flags are usage errors (exit 2).
 */
import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";

describe("kvgraft bench fast-path", () => {
  it("answers every request from the library, without a GPU request, and reports latencies", () => {
    const r = runCli(["bench", "fast-path", "--requests", "20", "--warmup", "2", "--json"]);
    expect(r.status, r.stderr).toBe(0);
    const result = r.json as {
      requests: number;
      warmup: number;
      roundTripMs: { p50: number; p99: number; max: number };
      edgeMs: { p50: number };
      requestsPerS: number;
      gpuRequests: number;
    };
    expect(result).toMatchObject({ requests: 20, warmup: 2, gpuRequests: 0 });
    expect(result.roundTripMs.p50).toBeGreaterThan(0);
    expect(result.roundTripMs.p99).toBeGreaterThanOrEqual(result.roundTripMs.p50);
    expect(result.requestsPerS).toBeGreaterThan(0);
  });

  it("refuses a request count that is not a positive integer", () => {
    const r = runCli(["bench", "fast-path", "--requests", "0"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--requests/);
  });
});
