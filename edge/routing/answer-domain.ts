/**
 * What a verified answer is like, recorded at deposit (issue 35): a transfer re-runs the verified
 * program on new numbers, and a program computes outside its problem's domain as readily as inside
 * it (change of -4 dollars when the apples cost more than the bill, a discount of 125%). So a
 * transferred answer with no independent check (answer-checks.ts) must lie where the verified one
 * lies:
 * - sign: each of its values has a sign (negative, zero, positive) the verified answer's values had;
 * - integer: when the verified answer is an integer and either every probe run at deposit printed
 *   an integer too (param-probe.ts moves each parameter alone by 1 and 2, and multiplies and
 *   divides it by 2 and 10: a program that computes counts, gcds, combinations), or the question counts things (`how
 *   many teams`, `in how many ways`: `how many` and a word that is no unit of measure), so must the
 *   answer be (6.4 teams for 32 students in teams of 5; but 0.83 hours is a right answer);
 * - range relative to the parameters: for each parameter the program reads, the verified answer was
 *   at most (or at least) that parameter, and so were the answers of every probe run: then the
 *   transferred answer must be too (the change is at most the amount paid).
 * The unit is the template's own words, which a transfer keeps (the template is the same, case and
 * written number forms included: shared/normalize), so it cannot change.
 *
 * Solutions deposited before this record have none; their domain is derived from the stored answer
 * and the problem alone: the sign; integer when the answer and every number of the problem are
 * integers (or the question counts); no range (there are no probe runs). That refuses at least what
 * a recorded domain would on sign and integer.
 */
import { z } from "zod";
import { type ParamProfile, type ParamSign, paramSign, paramSigns } from "../../shared/params.js";
import type { ProbeRun } from "./param-probe.js";

export const answerBoundSchema = z.object({
  /** Index of the parameter (order of appearance). */
  param: z.number().int().nonnegative(),
  relation: z.enum(["atMost", "atLeast"]),
});
export type AnswerBound = z.infer<typeof answerBoundSchema>;

/** The recorded domain (stored in the solution's verification as `answerDomain`). */
export const answerDomainSchema = z.object({
  version: z.literal(1),
  signs: z.array(z.enum(paramSigns)),
  integer: z.boolean(),
  bounds: z.array(answerBoundSchema),
});
export type AnswerDomain = z.infer<typeof answerDomainSchema>;

const NUMBER = /^-?\d+(?:\.\d+)?(?:\/\d+)?$/;

/** The values of a plain numeric answer (`11`, `-2.5`, `5/36`, `2, 3`), or null for anything else. */
function valuesOf(answer: string): { text: string; value: number }[] | null {
  const parts = answer.split(",").map((p) => p.trim());
  if (parts.length === 0 || !parts.every((p) => NUMBER.test(p))) return null;
  return parts.map((text) => {
    const [top, bottom] = text.split("/");
    return { text, value: bottom === undefined ? Number(top) : Number(top) / Number(bottom) };
  });
}

const isInteger = (text: string) => /^-?\d+$/.test(text);

function signOf(text: string, value: number): ParamSign {
  return value === 0 ? "zero" : paramSign(text);
}

/** Words after `how many` that measure rather than count (a count is an integer, a measure need not be). */
const MEASURES = new Set(
  (
    "second minute hour day week month year decade century millisecond " +
    "millimeter millimetre centimeter centimetre meter metre kilometer kilometre inch inche foot feet yard mile " +
    "gram kilogram milligram tonne ton pound ounce liter litre milliliter millilitre gallon quart pint cup " +
    "teaspoon tablespoon calorie kilocalorie joule kilojoule watt kilowatt volt amp ampere " +
    "dollar cent euro yen rupee percent degree square cubic time kcal kwh mins secs"
  ).split(" "),
);

/** Whether the question counts things: `how many` and a word that is no unit (`teams`, `ways`). */
export function countsThings(normalizedText: string): boolean {
  const text = normalizedText.toLowerCase();
  const m =
    /\bhow many\s+(?:(?:more|fewer|different|distinct|whole|full|complete|possible)\s+)?([a-z]+)/.exec(text);
  if (!m) return false;
  const word = m[1] as string;
  // Abbreviations (`km`, `kg`, `ml`) are units: words of three letters or fewer never count things.
  const forms = [word, word.replace(/s$/, ""), word.replace(/es$/, "")];
  return word.length >= 4 && !forms.some((f) => MEASURES.has(f));
}

/**
 * The domain of a verified answer: `normalizedText` and `literals` are its problem and numbers,
 * `profile` what the program does with them, `runs` the deposit's probe runs (none for a solution
 * deposited before this record). Null when the verified answer is not a plain number: no transfer
 * answer is then in its domain.
 */
export function answerDomain(
  normalizedText: string,
  literals: readonly string[],
  answer: string,
  profile: ParamProfile | null,
  runs: readonly ProbeRun[] | null,
): AnswerDomain | null {
  const values = valuesOf(answer.trim());
  if (!values) return null;
  const signs = [...new Set(values.map((v) => signOf(v.text, v.value)))];
  const integerAnswer = values.every((v) => isInteger(v.text));
  // Without probe runs, integer problem numbers stand in for them (the stricter side).
  const integerRuns =
    runs === null ? literals.every(isInteger) : runs.every((r) => /^-?\d+$/.test(r.answer.trim()));
  const integer = integerAnswer && (integerRuns || countsThings(normalizedText));
  const bounds: AnswerBound[] = [];
  const single = values.length === 1 ? (values[0] as { value: number }).value : null;
  if (single !== null && profile !== null && runs !== null && runs.length > 0) {
    const points = [{ params: literals, value: single }];
    for (const run of runs) {
      const v = valuesOf(run.answer.trim());
      if (v?.length === 1) points.push({ params: run.params, value: (v[0] as { value: number }).value });
    }
    for (const [i, spec] of profile.params.entries()) {
      if (spec.role !== "read") continue;
      const at = (p: { params: readonly string[] }) => Number(p.params[i]);
      if (points.every((p) => p.value <= at(p))) bounds.push({ param: i, relation: "atMost" });
      else if (points.every((p) => p.value >= at(p))) bounds.push({ param: i, relation: "atLeast" });
    }
  }
  return { version: 1, signs, integer, bounds };
}

/** The stored domain of a solution, else the one derived from its answer and numbers alone. */
export function domainOf(
  verification: Record<string, unknown>,
  problem: { normalizedText: string; params: readonly (number | string)[] },
  answer: string,
  profile: ParamProfile | null,
): AnswerDomain | null {
  const stored = answerDomainSchema.safeParse(verification.answerDomain);
  if (stored.success) return stored.data;
  return answerDomain(problem.normalizedText, problem.params.map(String), answer, profile, null);
}

/**
 * Why `answer` (computed on the query's `params`) lies outside `domain`, or null when it lies in it.
 */
export function outsideDomain(
  domain: AnswerDomain | null,
  params: readonly string[],
  answer: string,
): string | null {
  if (!domain)
    return "The verified answer is not a plain number, so no other answer is known to be in its domain.";
  const values = valuesOf(answer);
  if (!values) return "The answer is not a plain number.";
  for (const v of values) {
    const sign = signOf(v.text, v.value);
    if (!domain.signs.includes(sign))
      return `The answer is ${sign}; the verified answer was ${domain.signs.join(" or ")}.`;
  }
  if (domain.integer && !values.every((v) => isInteger(v.text)))
    return "The answer is not an integer; the verified answer and its problem's numbers were integers.";
  const single = values.length === 1 ? (values[0] as { value: number }).value : null;
  for (const bound of domain.bounds) {
    const p = Number(params[bound.param]);
    if (single === null || !Number.isFinite(p))
      return "The answer cannot be compared with the verified range.";
    if (bound.relation === "atMost" && single > p)
      return `The answer is more than number ${bound.param + 1} (${params[bound.param]}); the verified answer never was.`;
    if (bound.relation === "atLeast" && single < p)
      return `The answer is less than number ${bound.param + 1} (${params[bound.param]}); the verified answer never was.`;
  }
  return null;
}
