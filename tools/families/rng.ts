/** The families' seeded randomness: the project's one generator (xoshiro128**), as an `Rng`. */
import { Xoshiro128 } from "../../gpu-node/synth/random.js";
import type { Rng } from "./family.js";

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
