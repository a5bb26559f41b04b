/**
 * The project's one seeded random generator: xoshiro128** seeded from a string through splitmix32,
 * deterministic across platforms and runtimes (pure integer arithmetic). `Xoshiro128` gives uint32
 * draws (the synthetic models' weights, random token prompts); `seededRng` gives the same stream as
 * floats, integers in a range and picks (the families' samplers, the training data, the generated
 * router library, the benches' and reliability loops' random choices). The same seed gives the
 * same draws: the committed model's training data depends on it, so the algorithm never changes.
 */

/** xoshiro128** seeded from a string through splitmix32; deterministic across platforms. */
export class Xoshiro128 {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  constructor(seed: string) {
    let h = 0x9e3779b9;
    for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x85ebca6b) >>> 0;
    const next = () => {
      h = (h + 0x9e3779b9) >>> 0;
      let z = h;
      z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
      z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
      return (z ^ (z >>> 15)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next() | 1;
  }
  /** Next uint32. */
  next(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }
}

const rotl = (x: number, k: number) => (x << k) | (x >>> (32 - k));

/** A seeded source of randomness (the families' samplers and every seeded choice). */
export interface Rng {
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** A float in [0, 1). */
  next(): number;
}

/** A deterministic `Rng` from a string seed: the same seed gives the same draws on every platform. */
export function seededRng(seed: string): Rng {
  const source = new Xoshiro128(seed);
  const next = () => source.next() / 2 ** 32;
  return {
    next,
    int(min, max) {
      if (!Number.isInteger(min) || !Number.isInteger(max) || max < min)
        throw new Error(`rng.int: bad range [${min}, ${max}]`);
      return min + Math.floor(next() * (max - min + 1));
    },
    pick(items) {
      if (items.length === 0) throw new Error("rng.pick: empty list");
      return items[Math.floor(next() * items.length)] as (typeof items)[number];
    },
  };
}
