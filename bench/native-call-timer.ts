/**
 * Times node-llama-cpp's calls into its native addon context during one measured step: how long the
 * promise of each `decodeBatch` (a libuv worker: llama_decode + synchronize, and the hops to and
 * from the worker thread) and each `sampleToken` (a worker: fill the vocabulary's candidates, run
 * the sampler chain) took. What a step costs beyond these calls is node-llama-cpp's and our
 * JavaScript on the main thread. Benchmarks only: it wraps a private object of node-llama-cpp.
 */
export interface NativeCallTimes {
  decodeBatchMs: number;
  sampleTokenMs: number;
}

const TIMED = ["decodeBatch", "sampleToken"] as const;

/** Wraps the addon context's timed methods once; `measure` returns their time during `step`. */
export function nativeCallTimer(addonContext: unknown): {
  measure<T>(step: () => Promise<T>): Promise<{ result: T; times: NativeCallTimes }>;
} {
  const ctx = addonContext as Record<string, (...args: unknown[]) => unknown>;
  let active: NativeCallTimes | null = null;
  for (const name of TIMED) {
    const original = ctx[name];
    if (typeof original !== "function") throw new Error(`addon context has no ${name}`);
    // The addon's methods are read-only properties of its prototype: shadowed on the instance.
    const timed = function timed(this: unknown, ...args: unknown[]) {
      const sink = active;
      const started = performance.now();
      const out = original.apply(this, args);
      if (sink && out instanceof Promise)
        return out.finally(() => {
          sink[name === "decodeBatch" ? "decodeBatchMs" : "sampleTokenMs"] += performance.now() - started;
        });
      return out;
    };
    Object.defineProperty(ctx, name, { value: timed, configurable: true, writable: true });
  }
  return {
    async measure(step) {
      const times: NativeCallTimes = { decodeBatchMs: 0, sampleTokenMs: 0 };
      active = times;
      try {
        return { result: await step(), times };
      } finally {
        active = null;
      }
    },
  };
}
