/**
 * A problem family: one kind of math problem, written several ways, with a Python program that
 * solves every instance from the problem's numbers and a sampler of valid numbers. The training
 * data of the embedded model (docs/model.md), the model's tests and the experiments (`kvgraft eval
 * solve`, `kvgraft eval flywheel`) all draw their problems from the families in this folder.
 */
import type { Rng } from "../../shared/random.js";

/** The subject areas the families cover. */
export type Domain =
  | "arithmetic"
  | "algebra"
  | "number-theory"
  | "combinatorics"
  | "geometry"
  | "probability"
  | "units"
  | "time";

/** The numbers of one instance, by parameter name. */
export type Params = Readonly<Record<string, number>>;

/** The samplers' seeded source of randomness (shared/random.ts). */
export type { Rng };

/**
 * One family. Every phrasing names each parameter exactly once as `{name}` (the number is written
 * there in digits) and may use `{@person}` and `{@person2}` for people's names the generator picks;
 * a phrasing contains no other digits, so the problem's numbers in order of appearance (what the
 * product passes to a program as PARAMS) are exactly its parameters in the order the phrasing
 * names them.
 */
export interface Family {
  /** Unique kebab-case id, e.g. `change-from-payment`. */
  id: string;
  domain: Domain;
  /** Parameter names (Python identifiers). */
  params: readonly string[];
  /**
   * At least five phrasings written with different vocabulary and word order. The last one is held
   * out of training for families that are trained on (the model's re-worded test).
   */
  phrasings: readonly string[];
  /** One short sentence of method, e.g. "The change is the payment minus the cost of the items." */
  method: string;
  /**
   * Python 3 statements that compute the answer from variables named as `params` and print only
   * the answer (last line). The generator prepends the line that reads the variables from PARAMS
   * in the phrasing's order (`count, price, paid = PARAMS`).
   */
  program: string;
  /** Valid numbers for an instance (the answer is well defined, in range, and as the program prints it). */
  sample(rng: Rng): Params;
  /** The answer, computed in TypeScript exactly as `program` prints it (tests check they agree). */
  answer(p: Params): string;
}
