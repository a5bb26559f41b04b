/**
 * Independent checks of a transferred answer, where the problem's shape allows one (issue 24): a
 * gcd must divide both numbers and leave coprime cofactors; a remainder of a power is recomputed
 * exactly; a root of a polynomial equation in one variable is substituted back, within the
 * rounding of the printed answer (and for a quadratic asked for its larger or smaller root,
 * compared with that root). Pure and exact where
 * the numbers are integers (BigInt). A problem of no known shape has no check (null).
 */

export const answerChecks = ["gcd_checked", "power_mod_recomputed", "root_substituted"] as const;
export type AnswerCheck = (typeof answerChecks)[number];

export interface AnswerCheckResult {
  check: AnswerCheck;
  ok: boolean;
}

const INTEGER = /^-?\d+$/;

/** The check for this problem and answer, or null when no check applies. */
export function checkAnswer(
  normalized: string,
  template: string,
  literals: readonly string[],
  answer: string,
): AnswerCheckResult | null {
  // Templates keep the problem's letter case; the shapes below are matched case-blind.
  const t = template.toLowerCase();
  if (/\b(?:greatest common (?:divisor|factor)|gcd|highest common factor)\b/.test(t))
    return gcdCheck(literals, answer);
  if (/remainder when #\^# is divided by #/.test(t)) return powerModCheck(literals, answer);
  // A root itself is asked for, not a sum, product or count of them.
  const aboutRoots =
    /\b(?:sum|product|difference|number|count|average|mean)\s+of\s+(?:the\s+|all\s+)?(?:real\s+)?(?:roots|solutions)\b/;
  if (/\broots?\b|\bsolutions?\b|\bsolve\b/.test(t) && !aboutRoots.test(t))
    return rootCheck(normalized, t, answer);
  return null;
}

function gcdCheck(literals: readonly string[], answer: string): AnswerCheckResult | null {
  const [a, b] = literals;
  if (literals.length !== 2 || !INTEGER.test(a ?? "") || !INTEGER.test(b ?? "")) return null;
  const x = abs(BigInt(a as string));
  const y = abs(BigInt(b as string));
  if (x === 0n && y === 0n) return null;
  const ok = INTEGER.test(answer) && gcd(x, y) === BigInt(answer);
  return { check: "gcd_checked", ok };
}

function powerModCheck(literals: readonly string[], answer: string): AnswerCheckResult | null {
  if (literals.length !== 3 || !literals.every((l) => INTEGER.test(l))) return null;
  const [base, exponent, modulus] = literals.map((l) => BigInt(l)) as [bigint, bigint, bigint];
  if (modulus <= 0n || exponent < 0n) return null;
  const ok = INTEGER.test(answer) && modPow(base, exponent, modulus) === BigInt(answer);
  return { check: "power_mod_recomputed", ok };
}

function rootCheck(normalized: string, template: string, answer: string): AnswerCheckResult | null {
  const equation = /(?:^|[\s:,])([-+*^.\w()]+=[-+*^.\w()]+)/.exec(normalized)?.[1];
  const variable = equation ? /[a-z]/i.exec(equation.replace(/\d+/g, ""))?.[0] : undefined;
  if (!equation || !variable) return null;
  const [left, right] = equation.split("=") as [string, string];
  const l = polynomial(left, variable);
  const r = polynomial(right, variable);
  if (!l || !r) return null;
  const p = subtract(l, r);
  const x = Number(answer);
  if (!/^-?\d+(?:\.\d+)?$/.test(answer) || !Number.isFinite(x))
    return { check: "root_substituted", ok: false };
  // A printed root is rounded: accept a root of p within the rounding of the answer's last digit
  // (at most 0.005, the cents programs round to), found as an exact zero or a sign change.
  const decimals = answer.split(".")[1]?.length ?? 0;
  const h = Math.min(0.005, 0.5 * 10 ** -decimals) * (1 + 1e-9);
  const scale = p.reduce((sum, c, k) => sum + Math.abs(c * x ** k), 1);
  let ok = Math.abs(evaluate(p, x)) <= 1e-12 * scale || evaluate(p, x - h) * evaluate(p, x + h) <= 0;
  const larger = /\b(?:larger|largest|greater|bigger)\b/.test(template);
  const smaller = /\b(?:smaller|smallest|lesser|least)\b/.test(template);
  if (ok && p.length === 3 && (larger || smaller)) {
    const [c, b, a] = p as [number, number, number];
    const d = b * b - 4 * a * c;
    const roots = [(-b + Math.sqrt(d)) / (2 * a), (-b - Math.sqrt(d)) / (2 * a)];
    const want = larger ? Math.max(...roots) : Math.min(...roots);
    ok = a !== 0 && d >= 0 && Math.abs(x - want) <= h;
  }
  return { check: "root_substituted", ok };
}

/**
 * Coefficients (index = power) of a sum of terms `c`, `cx`, `c*x`, `x^k`, `cx^k`; null for anything
 * else (parentheses, other letters), so an unknown form is never checked wrongly.
 */
function polynomial(side: string, variable: string): number[] | null {
  const terms = side.match(/[+-]?[^+-]+/g);
  if (!terms || terms.join("") !== side) return null;
  const coefficients: number[] = [];
  const v = variable.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const term = new RegExp(`^([+-]?)(\\d+(?:\\.\\d+)?)?(?:\\*?(${v})(?:\\^(\\d+))?)?$`);
  for (const t of terms) {
    const m = term.exec(t);
    if (!m || (m[2] === undefined && m[3] === undefined)) return null;
    const power = m[3] === undefined ? 0 : Number(m[4] ?? 1);
    if (power > 12) return null;
    const c = (m[1] === "-" ? -1 : 1) * Number(m[2] ?? 1);
    coefficients[power] = (coefficients[power] ?? 0) + c;
  }
  return Array.from(coefficients, (c) => c ?? 0);
}

function subtract(a: number[], b: number[]): number[] {
  const out = Array.from({ length: Math.max(a.length, b.length) }, (_, k) => (a[k] ?? 0) - (b[k] ?? 0));
  while (out.length > 1 && out.at(-1) === 0) out.pop();
  return out;
}

function evaluate(p: number[], x: number): number {
  return p.reduceRight((acc, c) => acc * x + c, 0);
}

const abs = (n: bigint) => (n < 0n ? -n : n);

function gcd(a: bigint, b: bigint): bigint {
  let [x, y] = [a, b];
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

function modPow(base: bigint, exponent: bigint, modulus: bigint): bigint {
  if (modulus === 1n) return 0n;
  let result = 1n;
  let b = ((base % modulus) + modulus) % modulus;
  let e = exponent;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % modulus;
    b = (b * b) % modulus;
    e >>= 1n;
  }
  return result;
}
