import { describe, expect, it } from "vitest";
import {
  createLocalRateLimiter,
  type WorkersRateLimitBinding,
  workersRateLimiter,
} from "../edge/rate-limit.js";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("local rate limiter", () => {
  it("allows the limit, then refuses with a retry time, then recovers after the window", async () => {
    const c = clock();
    const limiter = createLocalRateLimiter({ limit: 3, windowS: 10, now: c.now });
    for (let i = 0; i < 3; i++) expect(await limiter.limit("k")).toEqual({ success: true, retryAfterS: 0 });
    expect(await limiter.limit("k")).toEqual({ success: false, retryAfterS: 10 });
    c.advance(4_500);
    expect(await limiter.limit("k")).toEqual({ success: false, retryAfterS: 6 });
    c.advance(5_499);
    expect(await limiter.limit("k")).toEqual({ success: false, retryAfterS: 1 });
    c.advance(1);
    expect((await limiter.limit("k")).success).toBe(true);
  });

  it("counts keys separately", async () => {
    const c = clock();
    const limiter = createLocalRateLimiter({ limit: 1, windowS: 60, now: c.now });
    expect((await limiter.limit("a")).success).toBe(true);
    expect((await limiter.limit("a")).success).toBe(false);
    expect((await limiter.limit("b")).success).toBe(true);
  });

  it("keeps memory bounded by forgetting expired, then oldest, windows", async () => {
    const c = clock();
    const limiter = createLocalRateLimiter({ limit: 1, windowS: 1, maxKeys: 3, now: c.now });
    for (const k of ["a", "b", "c"]) await limiter.limit(k);
    c.advance(10);
    // a fourth key evicts the oldest active window ("a"), which then starts afresh
    expect((await limiter.limit("d")).success).toBe(true);
    expect((await limiter.limit("b")).success).toBe(false);
    expect((await limiter.limit("a")).success).toBe(true);
    // "a" came back as a new key and pushed out "b", the oldest left
    expect((await limiter.limit("b")).success).toBe(true);
    expect((await limiter.limit("d")).success).toBe(false);
    // after the window every key is forgotten
    c.advance(1_000);
    for (const k of ["a", "b", "c", "d", "e"]) expect((await limiter.limit(k)).success, k).toBe(true);
  });
});

describe("Workers binding adapter", () => {
  it("passes the key through and answers a refusal with the binding's period", async () => {
    const seen: string[] = [];
    let allow = true;
    const binding: WorkersRateLimitBinding = {
      limit: async ({ key }) => {
        seen.push(key);
        return { success: allow };
      },
    };
    const limiter = workersRateLimiter(binding, 60);
    expect(await limiter.limit("key_1")).toEqual({ success: true, retryAfterS: 0 });
    allow = false;
    expect(await limiter.limit("key_1")).toEqual({ success: false, retryAfterS: 60 });
    expect(seen).toEqual(["key_1", "key_1"]);
  });
});
