/**
 * Turns a family, a phrasing and numbers into a problem the product sees: the text, the numbers as
 * written (PARAMS, in order of appearance), the whole program (the unpacking line, then the family's
 * statements) and the answer.
 */
import { problemTemplate } from "../../shared/normalize.js";
import type { Family, Params, Rng } from "./family.js";

/** People's names for `{@person}` and `{@person2}`. */
export const PEOPLE = [
  "Sam",
  "Ana",
  "Lee",
  "Maya",
  "Omar",
  "Priya",
  "Jon",
  "Kira",
  "Luis",
  "Nina",
  "Tom",
  "Zoe",
  "Ravi",
  "Elena",
  "Ben",
  "Mei",
  "Carlos",
  "Ivy",
  "Noah",
  "Sara",
  "Yusuf",
  "Hana",
  "Leo",
  "Amir",
] as const;

/** One rendered instance of a family. */
export interface Instance {
  familyId: string;
  phrasing: number;
  problem: string;
  /** The numbers as the problem writes them, in order of appearance. */
  literals: string[];
  /** Parameter names in the order the phrasing names them (the unpacking line's order). */
  order: string[];
  program: string;
  answer: string;
  params: Params;
}

const SLOT = /\{(@?[A-Za-z_][A-Za-z0-9_]*)\}/g;

/** How a number is written in a problem: integers plainly, others in their shortest decimal form. */
export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) throw new Error(`not a finite number: ${n}`);
  if (Number.isInteger(n)) return String(n);
  return String(Number.parseFloat(n.toFixed(6)));
}

/** The parameter names a phrasing uses, in order of appearance. */
export function phrasingOrder(text: string): string[] {
  return [...text.matchAll(SLOT)].map((m) => m[1] as string).filter((name) => !name.startsWith("@"));
}

/**
 * Renders `family`'s phrasing `index` (or `text`, a variation of it with the same slots) with
 * `params`; people's names come from `rng`.
 */
export function renderInstance(
  family: Family,
  index: number,
  params: Params,
  rng: Rng,
  text: string | undefined = family.phrasings[index],
): Instance {
  if (text === undefined) throw new Error(`${family.id}: no phrasing ${index}`);
  const person = rng.pick(PEOPLE);
  const person2 = rng.pick(PEOPLE.filter((p) => p !== person));
  const problem = text.replace(SLOT, (_, name: string) => {
    if (name === "@person") return person;
    if (name === "@person2") return person2;
    const value = params[name];
    if (value === undefined) throw new Error(`${family.id}: phrasing ${index} names unknown {${name}}`);
    return formatNumber(value);
  });
  const order = phrasingOrder(text);
  const unpack = order.length === 1 ? `${order[0]} = PARAMS[0]` : `${order.join(", ")} = PARAMS`;
  return {
    familyId: family.id,
    phrasing: index,
    problem,
    literals: problemTemplate(problem).literals,
    order,
    program: `${unpack}\n${family.program.trim()}`,
    answer: family.answer(params),
    params,
  };
}

/** Why an instance is not what the product would see (PARAMS differ from the phrasing's numbers), or null. */
export function instanceProblem(instance: Instance): string | null {
  const expected = instance.order.map((name) => formatNumber(instance.params[name] as number));
  const got = instance.literals;
  if (got.length !== expected.length || got.some((lit, i) => Number(lit) !== Number(expected[i])))
    return `PARAMS would be [${got.join(", ")}], the phrasing's numbers are [${expected.join(", ")}]`;
  return null;
}
