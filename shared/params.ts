/**
 * Problem parameters carried exactly, and the profile a verified program's parameters got at
 * deposit. A parameter is the canonical text of a number of the problem (`-12`, `0.75`, any number
 * of digits, see shared/normalize `problemTemplate().literals`); programs get integers as Python
 * ints of any size and decimals as the literal text (Python reads it to the nearest float, as it
 * would the same literal in the program), never a value that went through a JavaScript float.
 *
 * A transfer (re-running a verified program on a query's numbers) is offered only for parameters
 * that play the role they played at deposit: the same kind (an integer where the program was
 * checked on an integer; a decimal parameter also takes an integer, passed as a decimal), the
 * same sign (negative, zero, positive), and a parameter the program does not read (an exponent
 * it hard-codes, say) must keep its deposit value: a new value there is another problem.
 */
import { z } from "zod";

/** One parameter on the wire: a canonical numeric literal (exact), or a plain finite number. */
export type ProgramParam = number | string;

/** A numeric literal as programs receive it: optional minus, no leading zeros, optional fraction. */
export const PARAM_LITERAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;
/** Longest literal on the wire: Python refuses integer text over 4,300 digits; answers must stay printable. */
export const MAX_PARAM_CHARS = 1001;
/** Longest number a problem may have for its program: a deposit's probe moves it, one digit longer at most. */
export const MAX_LITERAL_CHARS = MAX_PARAM_CHARS - 1;

export const programParamSchema = z.union([
  z.number().finite(),
  z.string().max(MAX_PARAM_CHARS).regex(PARAM_LITERAL, "a parameter string must be a numeric literal"),
]);

export const paramKinds = ["integer", "decimal"] as const;
export type ParamKind = (typeof paramKinds)[number];
export const paramSigns = ["negative", "zero", "positive"] as const;
export type ParamSign = (typeof paramSigns)[number];
/** `read`: perturbing it alone changed the program's answer; `ignored`: it never did. */
export const paramRoles = ["read", "ignored"] as const;
export type ParamRole = (typeof paramRoles)[number];

export const paramSpecSchema = z.object({
  literal: z.string().regex(PARAM_LITERAL),
  kind: z.enum(paramKinds),
  sign: z.enum(paramSigns),
  role: z.enum(paramRoles),
});
export type ParamSpec = z.infer<typeof paramSpecSchema>;

/** What the deposit learned about a program's parameters (stored in the solution's verification). */
export const paramProfileSchema = z.object({ version: z.literal(1), params: z.array(paramSpecSchema) });
export type ParamProfile = z.infer<typeof paramProfileSchema>;

export function paramKind(literal: string): ParamKind {
  return literal.includes(".") ? "decimal" : "integer";
}

export function paramSign(literal: string): ParamSign {
  if (literal.startsWith("-")) return "negative";
  return /^0(?:\.0+)?$/.test(literal) ? "zero" : "positive";
}

/**
 * Significant digits a decimal may have and still be read by Python as the float whose shortest
 * text is that decimal (IEEE doubles round-trip 15).
 */
export const MAX_DECIMAL_DIGITS = 15;

function significantDigits(literal: string): number {
  return literal.replace(/[-.]/g, "").replace(/^0+/, "").length;
}

/**
 * The literal moved `step` away from zero within its sign (`12` -> `13`, `-4` -> `-5`, `0.75` ->
 * `1.75`); zero becomes `step`. Exact for any number of digits.
 */
export function perturbLiteral(literal: string, step: number): string {
  const negative = literal.startsWith("-");
  const [whole = "0", fraction] = (negative ? literal.slice(1) : literal).split(".");
  const moved = (BigInt(whole) + BigInt(step)).toString();
  return `${negative ? "-" : ""}${moved}${fraction === undefined ? "" : `.${fraction}`}`;
}

/**
 * The literal times `factor` (a positive integer), exact for any number of digits, in canonical
 * form (`0.75` * 2 -> `1.5`): how a deposit probes the answer's range far from the verified numbers.
 */
export function scaleLiteral(literal: string, factor: number): string {
  const negative = literal.startsWith("-");
  const [whole = "0", fraction = ""] = (negative ? literal.slice(1) : literal).split(".");
  const digits = (BigInt(whole + fraction) * BigInt(factor)).toString().padStart(fraction.length + 1, "0");
  const int = digits.slice(0, digits.length - fraction.length);
  const frac = digits.slice(digits.length - fraction.length).replace(/0+$/, "");
  const text = frac ? `${int}.${frac}` : int;
  return negative && text !== "0" ? `-${text}` : text;
}

/**
 * The literal divided by `divisor` (2 or 10) within its kind: an integer is divided exactly or
 * truncated toward zero (null when that leaves 0), a decimal exactly (`0.75` / 2 -> `0.375`).
 */
export function shrinkLiteral(literal: string, divisor: 2 | 10): string | null {
  if (!literal.includes(".")) {
    const q = BigInt(literal) / BigInt(divisor);
    return q === 0n ? null : q.toString();
  }
  // x / d = (x * (10 / d)) / 10: scale, then move the point one place left.
  const scaled = scaleLiteral(literal, 10 / divisor);
  const negative = scaled.startsWith("-");
  const [whole = "0", fraction = ""] = (negative ? scaled.slice(1) : scaled).split(".");
  const digits = (whole + fraction).padStart(fraction.length + 2, "0");
  const cut = digits.length - fraction.length - 1;
  const int = digits.slice(0, cut).replace(/^0+(?=\d)/, "");
  const frac = digits.slice(cut).replace(/0+$/, "");
  const text = frac ? `${int}.${frac}` : int;
  return negative ? `-${text}` : text;
}

/**
 * Why a query is not answered by a transfer of a verified program: its numbers (the `param_` codes), or
 * the run (the program failed on them, printed something that is not a plain numeric answer, an
 * independent check of the answer failed, or, with no such check, the answer lies outside the
 * verified answer's domain: edge/routing/answer-domain.ts).
 */
export const transferRefusalCodes = [
  "no_param_profile",
  "param_count",
  "param_not_modelled",
  "param_kind",
  "param_sign",
  "param_precision",
  "param_too_long",
  "program_failed",
  "answer_not_plain",
  "answer_check_failed",
  "answer_out_of_domain",
] as const;
export type TransferRefusalCode = (typeof transferRefusalCodes)[number];

export interface TransferRefusal {
  code: TransferRefusalCode;
  /** Index of the parameter (order of appearance), null when it is about all of them. */
  param: number | null;
  message: string;
}

/**
 * The parameters to run a verified program on for a query with these literals, or why the query
 * is not a transfer of it (see the module comment for the rules).
 */
export function transferParams(
  profile: ParamProfile | null,
  literals: readonly string[],
): { ok: true; params: string[] } | { ok: false; refusal: TransferRefusal } {
  const refuse = (code: TransferRefusalCode, param: number | null, message: string) => ({
    ok: false as const,
    refusal: { code, param, message },
  });
  if (profile === null)
    return refuse("no_param_profile", null, "The program's parameters were not profiled at deposit.");
  if (literals.length !== profile.params.length)
    return refuse("param_count", null, "The query has another count of numbers than the verified problem.");
  const params: string[] = [];
  for (const [i, spec] of profile.params.entries()) {
    const literal = literals[i] as string;
    if (literal.length > MAX_LITERAL_CHARS)
      return refuse("param_too_long", i, `Number ${i + 1} is longer than ${MAX_LITERAL_CHARS} characters.`);
    if (spec.role === "ignored" && literal !== spec.literal)
      return refuse("param_not_modelled", i, `Number ${i + 1} changed, but the program does not read it.`);
    if (paramSign(literal) !== spec.sign)
      return refuse(
        "param_sign",
        i,
        `Number ${i + 1} is ${paramSign(literal)}; it was ${spec.sign} when verified.`,
      );
    const kind = paramKind(literal);
    if (kind === "decimal" && spec.kind === "integer")
      return refuse("param_kind", i, `Number ${i + 1} is a decimal; the program was verified on an integer.`);
    if (spec.kind === "decimal" && significantDigits(literal) > MAX_DECIMAL_DIGITS)
      return refuse(
        "param_precision",
        i,
        `Number ${i + 1} has more digits than a decimal parameter carries.`,
      );
    params.push(spec.kind === "decimal" && kind === "integer" ? `${literal}.0` : literal);
  }
  return { ok: true, params };
}
