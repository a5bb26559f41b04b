/**
 * Problem normalization: one plain-text form for the many ways a math problem is written, so the
 * edge can fingerprint exact repeats and match templates (same wording, new numbers).
 *
 * Rules, in the order they apply (the whole pass repeats until nothing changes, so the result is
 * a fixpoint and normalizeProblem is idempotent):
 * - Vulgar fractions keep their value: `3¾` -> `3 3/4` (NFKC alone gives `33⁄4`, i.e. 33/4),
 *   `¾x` -> `(3/4)x`; likewise `1³⁄₄` -> `1 3/4`.
 * - Unicode superscript/subscript runs become `^...`/`_...` (NFKC alone would turn `x²` into `x2`),
 *   then NFKC; `×·⋅∗` -> `*`, `÷` -> `/`, dashes and `−` -> `-`, `≤ ≥ ≠ ≈` -> `<= >= != ~=`,
 *   `π` -> `pi`, `°` -> ` degrees`, `∞` -> `infinity`, curly quotes -> ASCII, `√x` -> `sqrt(x)`.
 * - LaTeX to what a person types: `$`, `$$`, `\(`, `\)`, `\[`, `\]` dropped (every `$` is dropped,
 *   so `$20`, `\$20` and `20` agree); `\frac{a}{b}` -> `a/b` (non-atomic sides parenthesized);
 *   `\sqrt{x}` -> `sqrt(x)`; `^{..}` -> `^(..)`; `\cdot`, `\times` -> `*`; `\le` etc. as above;
 *   `\left`, `\right`, spacing commands and `~` dropped; `\text{..}`-like wrappers unwrapped;
 *   `^\circ` -> ` degrees`; capital Greek commands become the letter (`\Gamma` -> `Γ`); any other
 *   command loses its backslash (`\pi` -> `pi`). Groups nest at most MAX_LATEX_DEPTH deep (400
 *   `problem_too_nested` beyond).
 * - Letter case is kept, every letter of it (issue 35): `Abc` and `abc` are two variables, `Cal`
 *   (kilocalories) and `cal`, `Mg` and `mg`, `MG` in a text written in capitals are other units,
 *   so no case is spelling only. `**` -> `^`, whitespace runs -> one space.
 * - Numbers keep their written form (issue 35): `0.0500` has three significant figures and `0.05`
 *   one, `007` is a code of three digits, `1,000` and `1.000` are different numbers in different
 *   countries. So leading and trailing zeros, `.5`, `-0` and thousands separators (`1,000,000`;
 *   `1\,000` / `1{,}000` in LaTeX become `1,000`) stay as written. A comma is a thousands
 *   separator when it groups three digits outside a list: not in `[..]`, `{..}`, a call
 *   `gcd(120,180)` or a tuple `(100,200)`. The value of a number is its canonical text (no
 *   separators, no leading or trailing zeros, `0.5`, `0`): what programs get (`literals`) and what
 *   the router compares (`canonicalNumbers`).
 * - Spacing: none around `+ * / ^ = < > ~`, none around a binary `-` (`a - b` -> `a-b`; `a -b`
 *   keeps its unary minus), none before `, ; : ? ! % ) ]` or a sentence `.`, none after `( [`,
 *   one after `,` and `;` (not after a thousands separator), and `3 : 4` -> `3:4`.
 * - Parentheses around a lone number or letter are dropped where that cannot change the meaning:
 *   `(1)/(2)` -> `1/2`, `x^(2)` -> `x^2`, but `f(x)`, `2(3)` and `(-3)^2` stay.
 * - Numbers in templates: every run of ASCII digits is a number, also inside words (`x2`, `log2`,
 *   `3rd`), so a changed index or base is a changed parameter; a dotted run with two or more dots
 *   (`1.2.3`) is a list of integers. A `-` is a sign when it follows the start, a space, an opening
 *   bracket, a separator or an operator. A number's slot keeps its written form apart from its
 *   digits: `#` for a canonical number, `#` and `,###` per thousands group, its leading and
 *   trailing zeros as written (`1,000` and `2,500` share the template `#,###`, `1000` is `#`;
 *   `$7.20` and `$9.60` share `#0`, `$9.65` is `#`; `0.0500` is `#00`, `0.05` is `#`); `.5` and `-0`
 *   stay as written. So two problems of one template differ only in the values of their numbers.
 * - Trailing whitespace and `. ? , ; :` are stripped (`!` stays: `5!` is a factorial).
 *
 * What these rules drop (spacing, LaTeX markup, `$`, Unicode forms of one symbol, parentheses
 * around a lone atom, trailing punctuation) cannot change a problem's answer; what could (case,
 * the written form of a number) is kept, so one fingerprint is one problem.
 */

import { sha256Hex } from "./hash.js";
import { latexToPlain } from "./latex.js";

/**
 * The version of these rules, stored with every problem: a row made by another version has another
 * fingerprint and template for the same text, and version 1 (lower-casing everything, `3¾` as
 * `33/4`) and version 2 (folding `Abc` to `abc` and `Cal` to `cal`, dropping zeros: `0.0500` as
 * `0.05`) merged problems that differ, so the edge answers only from rows of this version.
 */
export const NORMALIZE_VERSION = 3;

/** Slot that stands for a number in a template. */
export const TEMPLATE_SLOT = "#";

const SUPERSCRIPTS: Record<string, string> = {
  "⁰": "0",
  "¹": "1",
  "²": "2",
  "³": "3",
  "⁴": "4",
  "⁵": "5",
  "⁶": "6",
  "⁷": "7",
  "⁸": "8",
  "⁹": "9",
  "⁺": "+",
  "⁻": "-",
  "⁽": "(",
  "⁾": ")",
  ⁿ: "n",
};
const SUBSCRIPTS: Record<string, string> = {
  "₀": "0",
  "₁": "1",
  "₂": "2",
  "₃": "3",
  "₄": "4",
  "₅": "5",
  "₆": "6",
  "₇": "7",
  "₈": "8",
  "₉": "9",
};

const CHAR_MAP: Record<string, string> = {
  "×": "*",
  "·": "*",
  "⋅": "*",
  "∙": "*",
  "∗": "*",
  "÷": "/",
  "⁄": "/",
  "∕": "/",
  "−": "-",
  "–": "-",
  "—": "-",
  "‐": "-",
  "‒": "-",
  "≤": "<=",
  "≥": ">=",
  "≠": "!=",
  "≈": "~=",
  π: "pi",
  "°": " degrees",
  "∞": "infinity",
  "‘": "'",
  "’": "'",
  "“": '"',
  "”": '"',
  ß: "ss",
  "\u200b": "",
  "\u200c": "",
  "\u200d": "",
  "\u2060": "",
  "\ufeff": "",
  "\u00ad": "",
};
const CHAR_MAP_RE = new RegExp(`[${Object.keys(CHAR_MAP).join("")}]`, "gu");

/** A run of digits grouped by thousands separators (`1,000,000`), as a regex source. */
const GROUPED = String.raw`(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d]|,\d)`;

/**
 * The positions of the commas of `s` that separate thousands (`1,000,000`), not items: not inside
 * `[..]` or `{..}`, a call `gcd(120,180)` or a tuple of bare numbers `(100,200)`. Prose in
 * parentheses (`(1 cubic meter = 1,000 liters)`) keeps the thousands reading.
 */
function thousandsCommas(s: string): Set<number> {
  const commas = new Set<number>();
  const brackets = new BracketScan(s);
  for (const m of s.matchAll(new RegExp(GROUPED, "g"))) {
    if (brackets.separatesItems(m.index)) continue;
    for (let i = 0; i < m[0].length; i++) if (m[0][i] === ",") commas.add(m.index + i);
  }
  return commas;
}

/**
 * Whether commas at a position sit in a bracket that lists items (see dropThousandsSeparators),
 * asked for increasing positions: one pass over the text however many numbers it has.
 */
class BracketScan {
  private readonly open: number[] = [];
  private scanned = 0;
  /** Index of the first letter, and of the first `)`, at or after each position (s.length if none). */
  private readonly nextLetter: Int32Array;
  private readonly nextClose: Int32Array;

  constructor(private readonly s: string) {
    this.nextLetter = new Int32Array(s.length + 1).fill(s.length);
    this.nextClose = new Int32Array(s.length + 1).fill(s.length);
    for (let i = s.length - 1; i >= 0; i--) {
      const c = s[i] as string;
      this.nextLetter[i] = /[a-zA-Z]/.test(c) ? i : (this.nextLetter[i + 1] as number);
      this.nextClose[i] = c === ")" ? i : (this.nextClose[i + 1] as number);
    }
  }

  separatesItems(at: number): boolean {
    const { s, open } = this;
    for (; this.scanned < at; this.scanned++) {
      const c = s[this.scanned];
      if (c === "(" || c === "[" || c === "{") open.push(this.scanned);
      else if (c === ")" || c === "]" || c === "}") open.pop();
    }
    const start = open.at(-1);
    if (start === undefined) return false;
    if (s[start] !== "(" || /[a-zA-Z0-9)\]]/.test(s[start - 1] ?? "")) return true;
    // A tuple of bare numbers `(100,200)`, not prose `(1 cubic meter = 1,000 liters)`.
    return (this.nextLetter[start + 1] as number) >= (this.nextClose[at] as number);
  }
}

function normalizeSpacing(s: string): string {
  const t = s
    .replace(/\s*([+*/^=<>~])\s*/g, "$1")
    .replace(/\s+-\s+/g, "-")
    .replace(/-\s+/g, "-");
  const grouping = thousandsCommas(t);
  return t
    .replace(/([,;])(?=\S)/g, (_m, sep: string, at: number) => (grouping.has(at) ? sep : `${sep} `))
    .replace(/(\d)\s*:\s*(?=\d)/g, "$1:")
    .replace(/\s+([,;:?!%)\]])/g, "$1")
    .replace(/\s+\.(?!\d)/g, ".")
    .replace(/([([])\s+/g, "$1");
}

/** Drops parentheses around a lone number or letter where no neighbour binds to them. */
function dropAtomParens(s: string): string {
  return s.replace(/\((-?\d+(?:\.\d+)?|[a-zA-Z])\)/g, (whole, atom: string, at: number) => {
    const prev = s[at - 1];
    const next = s[at + whole.length];
    if (prev !== undefined && /[\p{L}\p{N}_)\]}!'.]/u.test(prev)) return whole;
    if (next !== undefined && /[\p{L}\p{N}([{_]/u.test(next)) return whole;
    if (next === "." && /\d/.test(s[at + whole.length + 1] ?? "")) return whole;
    if (atom.startsWith("-") && next === "^") return whole;
    return atom;
  });
}

/** A number in normalized text: [start, end) covers the sign when there is one. */
interface NumberSpan {
  start: number;
  end: number;
  /** The canonical text of its value (`1000`, `0.05`, `-3`). */
  text: string;
  value: number;
  /** As written (`1,000`, `0.0500`, `-3`). */
  written: string;
}

const SIGN_CONTEXT = /[\s([{,;:=+\-*/^<>~]/;

const stripLeadingZeros = (digits: string) => digits.replace(/^0+(?=\d)/, "");

/**
 * Every number of `s` in order, with its canonical text and its written form; a number grouped by
 * thousands separators (`1,000,000`) is one number.
 */
function scanNumbers(s: string): NumberSpan[] {
  // Scan the text without its thousands separators; `at[i]` is where plain[i] is in `s`.
  const grouping = thousandsCommas(s);
  let plain = "";
  const at: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (grouping.has(i)) continue;
    plain += s[i];
    at.push(i);
  }
  at.push(s.length);
  const span = (start: number, end: number, text: string): NumberSpan => {
    const from = at[start] as number;
    const to = (at[end - 1] as number) + 1;
    return { start: from, end: to, text, value: Number(text), written: s.slice(from, to) };
  };
  const spans: NumberSpan[] = [];
  for (const m of plain.matchAll(/\d+(?:\.\d+)*/g)) {
    const run = m[0];
    const parts = run.split(".");
    if (parts.length > 2) {
      // `1.2.3` is a list (a version, a date), not a decimal.
      let offset = m.index;
      for (const part of parts) {
        spans.push(span(offset, offset + part.length, stripLeadingZeros(part)));
        offset += part.length + 1;
      }
      continue;
    }
    let start = m.index;
    let intPart = parts[0] as string;
    let fracPart = parts[1] ?? "";
    if (parts.length === 1 && plain[start - 1] === "." && !/[a-zA-Z0-9.]/.test(plain[start - 2] ?? "")) {
      // `.5` is `0.5`.
      start--;
      fracPart = intPart;
      intPart = "0";
    }
    intPart = stripLeadingZeros(intPart);
    fracPart = fracPart.replace(/0+$/, "");
    let text = fracPart ? `${intPart}.${fracPart}` : intPart;
    if (plain[start - 1] === "-" && (start - 1 === 0 || SIGN_CONTEXT.test(plain[start - 2] as string))) {
      start--;
      // `-0` is `0`.
      if (/^0(?:\.0*)?$/.test(text) === false) text = `-${text}`;
    }
    spans.push(span(start, m.index + run.length, text));
  }
  return spans;
}

/**
 * The text with every number as the canonical text of its value (`1,000` -> `1000`, `0.50` ->
 * `0.5`): for comparing the numbers two texts state (the router's `similar` step), never for
 * telling problems apart.
 */
export function canonicalNumbers(s: string): string {
  let out = "";
  let last = 0;
  for (const span of scanNumbers(s)) {
    out += s.slice(last, span.start) + span.text;
    last = span.end;
  }
  return out + s.slice(last);
}

/**
 * A number's slot in a template: `#` for its digits, with `,###` per thousands group and its leading
 * and trailing zeros as written (`1,000` -> `#,###`, `0.0500` -> `#00`, `3.0` -> `#.0`, `007` ->
 * `00#`); a form that is not such (`.5`, `-0`) stays as written (see the module comment).
 */
function slotOf(span: NumberSpan): string {
  const sign = span.text.startsWith("-") ? "-" : "";
  let body = span.written.slice(sign.length);
  const lead = /^0+(?=\d)/.exec(body)?.[0] ?? "";
  body = body.slice(lead.length);
  const trail = body.includes(".") ? (/\.0+$/.exec(body)?.[0] ?? /0+$/.exec(body)?.[0] ?? "") : "";
  body = body.slice(0, body.length - trail.length);
  const groups = body.split(",").length - 1;
  if (sign + body.replaceAll(",", "") !== span.text) return span.written;
  return lead + TEMPLATE_SLOT + ",###".repeat(groups) + trail;
}

const VULGAR_FRACTIONS = "½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅐⅛⅜⅝⅞⅑⅒↉";
const VULGAR_RE = new RegExp(`(?:(\\d)[ \\t]*)?([${VULGAR_FRACTIONS}])(?=(.?))`, "gu");

/**
 * Vulgar fractions keep their value: NFKC alone turns `3¾` into `33⁄4`, i.e. 33/4. A fraction after
 * a whole number is a mixed number, written `3 3/4`; one before a letter, digit or bracket is
 * parenthesized, and so is one after a letter (`¾x` -> `(3/4)x`, `x½` -> `x(1/2)`), as `\frac` is.
 * `⅟4` is `1/4`.
 */
function vulgarFractions(s: string): string {
  return s
    .replace(VULGAR_RE, (_m, whole: string | undefined, frac: string, next: string, at: number) => {
      const body = frac.normalize("NFKC").replace("⁄", "/");
      const prev = whole ? undefined : s[at - 1];
      const joined = /[\p{L}\p{N}(]/u.test(next) || (prev !== undefined && /[\p{L})]/u.test(prev));
      const text = joined ? `(${body})` : body;
      return whole ? `${whole} ${text}` : text;
    })
    .replaceAll("⅟", "1/");
}

/** Unicode super- and subscript runs to `^...` and `_...`, before NFKC flattens them to digits. */
function scripts(s: string): string {
  return s
    .replace(
      /(\d?)[ \t]*([⁰¹²³⁴⁵⁶⁷⁸⁹]+)⁄([₀₁₂₃₄₅₆₇₈₉]+)/g,
      (_m, whole: string, top: string, bottom: string) => {
        const body = `${[...top].map((c) => SUPERSCRIPTS[c]).join("")}/${[...bottom].map((c) => SUBSCRIPTS[c]).join("")}`;
        return whole ? `${whole} ${body}` : body;
      },
    )
    .replace(/[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ]+/g, (run) => `^${[...run].map((c) => SUPERSCRIPTS[c]).join("")}`)
    .replace(/[₀₁₂₃₄₅₆₇₈₉]+/g, (run) => `_${[...run].map((c) => SUBSCRIPTS[c]).join("")}`);
}

function normalizeOnce(s: string): string {
  let t = vulgarFractions(s)
    .normalize("NFKC")
    .replace(CHAR_MAP_RE, (c) => CHAR_MAP[c] ?? c);
  t = t.replace(/√\s*(\d+(?:\.\d+)?|[a-zA-Z])/g, "sqrt($1)").replace(/√\s*/g, "sqrt");
  t = latexToPlain(t).replaceAll("**", "^");
  t = t.replace(/\s+/g, " ").trim();
  t = normalizeSpacing(t);
  t = dropAtomParens(t);
  return t.replace(/[\s.?,;:]+$/, "");
}

/** The canonical plain-text form of a problem (see the module comment for the rules). */
export function normalizeProblem(text: string): string {
  // Some rewrites expose new matches (dropped parentheses, merged digits): repeat to a fixpoint.
  let cur = scripts(text);
  for (let round = 0; round < 8; round++) {
    const next = normalizeOnce(cur);
    if (next === cur) break;
    cur = next;
  }
  return cur;
}

/** SHA-256 hex of the normalized problem: equal for exact repeats however they are formatted. */
export function problemFingerprint(text: string): Promise<string> {
  return sha256Hex(normalizeProblem(text));
}

/** A problem's template and its numbers, in order of appearance. */
export interface ProblemTemplate {
  /** The normalized problem with every number replaced by its slot (`#`, `#,###`, or as written). */
  template: string;
  /** The numbers as floats: for ordering and display; large integers lose precision here. */
  params: number[];
  /** The numbers as exact canonical text (`-12`, `0.75`, any number of digits): what programs get. */
  literals: string[];
}

/** The normalized problem with every number replaced by its slot, and those numbers in order of appearance. */
export function problemTemplate(text: string): ProblemTemplate {
  const normalized = normalizeProblem(text);
  const params: number[] = [];
  const literals: string[] = [];
  let template = "";
  let last = 0;
  for (const span of scanNumbers(normalized)) {
    template += normalized.slice(last, span.start) + slotOf(span);
    params.push(span.value);
    literals.push(span.text);
    last = span.end;
  }
  return { template: template + normalized.slice(last), params, literals };
}
