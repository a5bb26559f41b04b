/**
 * How the pool reads a GPU node's failure: a copy that failed its hash or probe check on one node
 * is that replica lost (the pool tries the other holder and forgets the record), not a verdict on
 * the block; other 4xx answers are verdicts about the request.
 */
import { describe, expect, it } from "vitest";
import { classifyFailure } from "../edge/cluster/pool-calls.js";
import { GpuError } from "../shared/gpu-transport.js";

describe("classifyFailure", () => {
  it("a node's failed copy is a lost replica; a missing one too; other 4xx are verdicts", () => {
    expect(classifyFailure(new GpuError(409, "block_probe_mismatch", "probe"))).toBe("lost_block");
    expect(classifyFailure(new GpuError(409, "block_corrupt", "bytes"))).toBe("lost_block");
    expect(classifyFailure(new GpuError(404, "block_not_found", "gone"))).toBe("lost_block");
    expect(classifyFailure(new GpuError(409, "fingerprint_mismatch", "other model"))).toBe("verdict");
    expect(classifyFailure(new GpuError(400, "bad_request", "no"))).toBe("verdict");
    expect(classifyFailure(new GpuError(429, "queue_full", "busy"))).toBe("retry");
    expect(classifyFailure(new GpuError(503, "draining", "later"))).toBe("suspect");
    expect(classifyFailure(new TypeError("fetch failed"))).toBe("gone");
  });
});
