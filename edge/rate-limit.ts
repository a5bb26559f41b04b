/**
 * Rate limiting behind one interface: a local fixed-window limiter for the Node entry, and an
 * adapter for the Cloudflare Workers rate-limiting binding.
 */

/** Decides whether one more request under `key` may proceed now. */
export interface RateLimiter {
  limit(key: string): Promise<{ success: boolean; retryAfterS: number }>;
}

/** Settings of the local limiter. */
export interface LocalRateLimiterOptions {
  /** Requests allowed per key and window. */
  limit: number;
  windowS: number;
  /** Keys tracked at once; beyond it the oldest window is forgotten (that key starts afresh). */
  maxKeys?: number;
  /** Milliseconds since the epoch; injectable so tests control time. */
  now?: () => number;
}

/**
 * A fixed-window limiter per key, in memory. A key's window starts with its first request; the map
 * is kept in window-start order, so expired windows are always at its head and eviction is O(1).
 */
export function createLocalRateLimiter(options: LocalRateLimiterOptions): RateLimiter {
  const windowMs = options.windowS * 1000;
  const maxKeys = options.maxKeys ?? 10_000;
  const now = options.now ?? Date.now;
  const windows = new Map<string, { start: number; count: number }>();

  return {
    async limit(key) {
      const t = now();
      for (const [k, w] of windows) {
        if (t - w.start < windowMs) break;
        windows.delete(k);
      }
      let w = windows.get(key);
      if (!w) {
        if (windows.size >= maxKeys) {
          const oldest = windows.keys().next();
          if (!oldest.done) windows.delete(oldest.value);
        }
        w = { start: t, count: 0 };
        windows.set(key, w);
      }
      if (w.count < options.limit) {
        w.count++;
        return { success: true, retryAfterS: 0 };
      }
      return { success: false, retryAfterS: Math.max(1, Math.ceil((w.start + windowMs - t) / 1000)) };
    },
  };
}

/** The shape of a Workers `ratelimits` binding. */
export interface WorkersRateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

/** Adapts a Workers binding; it does not say when its window ends, so a refusal waits one period. */
export function workersRateLimiter(binding: WorkersRateLimitBinding, periodS: number): RateLimiter {
  return {
    async limit(key) {
      const { success } = await binding.limit({ key });
      return { success, retryAfterS: success ? 0 : periodS };
    },
  };
}
