/**
 * Answer comparison for verified solutions. Runtime-neutral: no `node:*` imports, so the edge and
 * the GPU node judge answers the same way.
 */

/** Relative tolerance for answers that are not both exact integers. */
const RELATIVE_TOLERANCE = 1e-9;

const INTEGER = /^[+-]?\d+$/;
const THOUSANDS = /^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/;
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;
const FRACTION = /^([+-]?(?:\d+\.?\d*|\.\d+))\s*\/\s*([+-]?(?:\d+\.?\d*|\.\d+))$/;

/** A parsed numeric answer: exact when it was an integer literal, else a float. */
type ParsedNumber = { exact: bigint } | { approx: number };

function parseNumber(text: string): ParsedNumber | null {
  const plain = THOUSANDS.test(text) ? text.replaceAll(",", "") : text;
  if (INTEGER.test(plain)) return { exact: BigInt(plain) };
  if (DECIMAL.test(plain)) return { approx: Number(plain) };
  const fraction = FRACTION.exec(plain);
  if (fraction) {
    const denominator = Number(fraction[2]);
    if (denominator === 0) return null;
    return { approx: Number(fraction[1]) / denominator };
  }
  return null;
}

function toFloat(n: ParsedNumber): number {
  return "exact" in n ? Number(n.exact) : n.approx;
}

function numbersEqual(a: ParsedNumber, b: ParsedNumber): boolean {
  // Two integer literals compare exactly: large integers must not collapse within a float tolerance.
  if ("exact" in a && "exact" in b) return a.exact === b.exact;
  const x = toFloat(a);
  const y = toFloat(b);
  if (!Number.isFinite(x) || !Number.isFinite(y)) return x === y;
  return x === y || Math.abs(x - y) <= RELATIVE_TOLERANCE * Math.max(Math.abs(x), Math.abs(y));
}

function normalizeText(text: string): string {
  return text.normalize("NFKC").toLowerCase().replace(/\s+/g, " ");
}

/**
 * Whether two answers agree. Both are trimmed; when both parse as numbers ("0.50", "1,000", "1e3",
 * "3/4") they compare numerically (integers exactly, others within a relative 1e-9), otherwise as
 * case-folded strings with whitespace runs collapsed.
 */
export function answersEqual(a: string, b: string): boolean {
  const left = a.trim();
  const right = b.trim();
  const x = parseNumber(left);
  const y = parseNumber(right);
  if (x && y) return numbersEqual(x, y);
  return normalizeText(left) === normalizeText(right);
}

/** A program's answer: the last non-empty line of its stdout, trimmed; null when there is none. */
export function extractAnswer(stdout: string): string | null {
  const lines = stdout.split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]?.trim();
    if (line) return line;
  }
  return null;
}
