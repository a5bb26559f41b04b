/**
 * How the pool reads a GPU node's failure (edge/cluster/gpu-failure.ts): a copy that failed its
 * hash or probe check on one node is that replica lost (the pool tries the other holder and
 * forgets the record), not a verdict on the block; other 4xx answers are verdicts about the
 * request; each failure also becomes the edge's own error.
 */
import { describe, expect, it } from "vitest";
import { gpuFailure, quarantinedByNode } from "../edge/cluster/gpu-failure.js";
import { DomainError } from "../shared/errors.js";
import { GpuError } from "../shared/gpu-transport.js";

const kind = (err: unknown) => gpuFailure(err, 1000).kind;

describe("gpuFailure", () => {
  it("a node's failed copy is a lost replica; a missing one too; other 4xx are verdicts", () => {
    expect(kind(new GpuError(409, "block_probe_mismatch", "probe"))).toBe("lost_block");
    expect(kind(new GpuError(409, "block_corrupt", "bytes"))).toBe("lost_block");
    expect(kind(new GpuError(404, "block_not_found", "gone"))).toBe("lost_block");
    expect(kind(new GpuError(409, "fingerprint_mismatch", "other model"))).toBe("verdict");
    expect(kind(new GpuError(400, "bad_request", "no"))).toBe("verdict");
    expect(kind(new GpuError(429, "queue_full", "busy"))).toBe("retry");
    // A background solve that waited for users' work: the node is busy, not suspect.
    expect(kind(new GpuError(429, "background_deferred", "busy"))).toBe("retry");
    expect(kind(new GpuError(503, "draining", "later"))).toBe("suspect");
    expect(kind(new TypeError("fetch failed"))).toBe("gone");
  });

  it("maps each failure to the edge's error, and says when it was shed for load", () => {
    const full = gpuFailure(new GpuError(429, "queue_full", "busy", undefined, 2), 1000);
    expect(full.shed).toBe(true);
    expect(full.error).toMatchObject({ status: 503, code: "gpu_unavailable", retryAfterS: 2 });
    const deferred = gpuFailure(new GpuError(429, "background_deferred", "busy", undefined, 1), 1000);
    expect(deferred.error).toMatchObject({ status: 503, details: { upstreamCode: "background_deferred" } });
    expect(gpuFailure(new GpuError(501, "sandbox_unavailable", "none"), 1000).error).toMatchObject({
      status: 501,
      code: "sandbox_unavailable",
      retryAfterS: undefined,
    });
    const corrupt = gpuFailure(new GpuError(409, "block_corrupt", "bytes"), 1000);
    expect(corrupt.shed).toBe(false);
    expect(corrupt.error).toMatchObject({ status: 409, code: "block_corrupt" });
    expect(quarantinedByNode(corrupt.error)).toBe(true);
    expect(quarantinedByNode(gpuFailure(new GpuError(404, "block_not_found", "gone"), 1000).error)).toBe(
      false,
    );
    expect(gpuFailure(new DOMException("late", "TimeoutError"), 1000).error).toMatchObject({
      status: 504,
      code: "gpu_timeout",
    });
    expect(gpuFailure(new TypeError("fetch failed"), 1000).error).toMatchObject({
      status: 503,
      code: "gpu_unavailable",
    });
    expect(gpuFailure(new DomainError(404, "no_such", "x"), 1000).error.code).toBe("no_such");
  });
});
