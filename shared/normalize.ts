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
 * - Case is folded only where it is spelling (see foldCase): `What`, `Sam`, `GCD`, a sentence's
 *   `In` or article `A` go lower case; variables (`A` vs `a`), units (`mA`, `MHz`), capitals words
 *   and non-ASCII letters keep theirs. `**` -> `^`, whitespace runs -> one space.
 * - Thousands separators `1,000,000` -> `1000000`, but not where commas separate items: in
 *   `[..]`, `{..}`, a call `gcd(120,180)` or a tuple `(100,200)`; `1\,000` / `1{,}000` in LaTeX.
 * - Spacing: none around `+ * / ^ = < > ~`, none around a binary `-` (`a - b` -> `a-b`; `a -b`
 *   keeps its unary minus), none before `, ; : ? ! % ) ]` or a sentence `.`, none after `( [`,
 *   one after `,` and `;`, and `3 : 4` -> `3:4`.
 * - Parentheses around a lone number or letter are dropped where that cannot change the meaning:
 *   `(1)/(2)` -> `1/2`, `x^(2)` -> `x^2`, but `f(x)`, `2(3)` and `(-3)^2` stay.
 * - Numbers: every run of ASCII digits is a number, also inside words (`x2`, `log2`, `3rd`), so a
 *   template never holds a digit and a changed index or base is a changed parameter. Leading zeros
 *   and trailing fractional zeros go (`007` -> `7`, `0.50` -> `0.5`, `3.0` -> `3`), `.5` -> `0.5`,
 *   `-0` -> `0`, and a dotted run with two or more dots (`1.2.3`) is a list of integers. A `-` is a
 *   sign when it follows the start, a space, an opening bracket, a separator or an operator.
 * - Trailing whitespace and `. ? , ; :` are stripped (`!` stays: `5!` is a factorial).
 */

import { sha256Hex } from "./hash.js";
import { latexToPlain } from "./latex.js";

/**
 * The version of these rules, stored with every problem: a row made by another version has another
 * fingerprint and template for the same text, and version 1 (lower-casing everything, `3¾` as
 * `33/4`) merged problems that differ, so the edge answers only from rows of this version.
 */
export const NORMALIZE_VERSION = 2;

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

/**
 * Replaces `1,000,000` by `1000000`, except where the commas separate items: inside `[..]` or
 * `{..}`, in a call `gcd(120,180)`, or in a tuple of bare numbers `(100,200)`. Prose in parentheses
 * (`(1 cubic meter = 1,000 liters)`) keeps the thousands reading.
 */
function dropThousandsSeparators(s: string): string {
  const re = /(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d]|,\d)/g;
  const brackets = new BracketScan(s);
  let out = "";
  let last = 0;
  for (const m of s.matchAll(re)) {
    const at = m.index;
    if (brackets.separatesItems(at)) continue;
    out += s.slice(last, at) + m[0].replaceAll(",", "");
    last = at + m[0].length;
  }
  return out + s.slice(last);
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
  return s
    .replace(/\s*([+*/^=<>~])\s*/g, "$1")
    .replace(/\s+-\s+/g, "-")
    .replace(/-\s+/g, "-")
    .replace(/([,;])(?=\S)/g, "$1 ")
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
  text: string;
  value: number;
}

const SIGN_CONTEXT = /[\s([{,;:=+\-*/^<>~]/;

const stripLeadingZeros = (digits: string) => digits.replace(/^0+(?=\d)/, "");

/** Every number of `s` in order, with its canonical text. */
function scanNumbers(s: string): NumberSpan[] {
  const spans: NumberSpan[] = [];
  for (const m of s.matchAll(/\d+(?:\.\d+)*/g)) {
    const at = m.index;
    const run = m[0];
    const parts = run.split(".");
    if (parts.length > 2) {
      // `1.2.3` is a list (a version, a date), not a decimal.
      let offset = at;
      for (const part of parts) {
        const text = stripLeadingZeros(part);
        spans.push({ start: offset, end: offset + part.length, text, value: Number(text) });
        offset += part.length + 1;
      }
      continue;
    }
    let start = at;
    let intPart = parts[0] as string;
    let fracPart = parts[1] ?? "";
    if (parts.length === 1 && s[at - 1] === "." && !/[a-zA-Z0-9.]/.test(s[at - 2] ?? "")) {
      // `.5` is `0.5`.
      start = at - 1;
      fracPart = intPart;
      intPart = "0";
    }
    intPart = stripLeadingZeros(intPart);
    fracPart = fracPart.replace(/0+$/, "");
    let text = fracPart ? `${intPart}.${fracPart}` : intPart;
    if (s[start - 1] === "-" && (start - 1 === 0 || SIGN_CONTEXT.test(s[start - 2] as string))) {
      start--;
      // `-0` is `0`.
      if (/^0(?:\.0*)?$/.test(text) === false) text = `-${text}`;
    }
    spans.push({ start, end: at + run.length, text, value: Number(text) });
  }
  return spans;
}

function canonicalNumbers(s: string): string {
  let out = "";
  let last = 0;
  for (const span of scanNumbers(s)) {
    out += s.slice(last, span.start) + span.text;
    last = span.end;
  }
  return out + s.slice(last);
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

/** Words of one or two letters whose case is spelling only when they open a sentence. */
const CASELESS_SHORT = new Set(
  "a an as at be by do go he if in is it my no of on or so to up us we".split(" "),
);
/** Words after a sentence-initial `A` that make it a variable (`A is 5`), not the article. */
const VARIABLE_FOLLOWERS = new Set("is be was equals and or has plus minus times to of if".split(" "));

/**
 * Case folding that keeps case where it can carry meaning. An ASCII word (apostrophes inside it
 * included: `TOWN'S`) is lower-cased when it is Title case of three letters or more (`What`,
 * `Sam`), capitals of three letters or more (`BUS`, `POPULATION`; a vertex list `ABC` names the
 * same triangle as `abc`; `GCD`), or a one- or two-letter opener of a sentence (`In`, `If`, the
 * article `A`); a text written all in capitals is lower-cased whole. Everything else keeps its
 * case: variables (`A` vs `a`, `AB`), units (`mA`, `Mm`, `MHz`) and non-ASCII letters (`Δ`, `δ`).
 */
function foldCase(s: string): string {
  if (!/[a-z]/.test(s) && /[A-Z]{3}/.test(s)) return s.replace(/[A-Z]+/g, (w) => w.toLowerCase());
  const words = s.replace(/[A-Za-z]+(?:'[A-Za-z]+)*/g, (word: string) => {
    const spelling = /^[A-Z](?:[a-z']*|[A-Z']*)$/.test(word) && word.replaceAll("'", "").length >= 3;
    return spelling ? word.toLowerCase() : word;
  });
  const articles = onlyArticles(words);
  return words.replace(/(?<![A-Za-z'])[A-Z][a-z]?(?![A-Za-z'])/g, (word: string, at: number) => {
    const lower = word.toLowerCase();
    if (!CASELESS_SHORT.has(lower) || !sentenceStart(words, at)) return word;
    return lower !== "a" || articles ? lower : word;
  });
}

/**
 * Whether every lone `a`/`A` of the text is the article: followed by a lower-case word that is not
 * a verb (`A train`, `a car`). Only then may a sentence's `A` become `a`: with a variable `a` or
 * `A` anywhere (`A = 5`, `A is 5`, `5a`, `A 5`), the case is the name.
 */
function onlyArticles(s: string): boolean {
  for (const m of s.matchAll(/(?<![A-Za-z])[aA](?![A-Za-z])/g)) {
    const next = /^\s+([a-z]{2,})\b/.exec(s.slice(m.index + 1))?.[1];
    const before = s[m.index - 1];
    if (next === undefined || VARIABLE_FOLLOWERS.has(next) || (before !== undefined && /\d/.test(before)))
      return false;
  }
  return true;
}

/** Whether `at` starts a sentence: the text's start, or after `.`, `?` or `!` and a space. */
function sentenceStart(s: string, at: number): boolean {
  const before = s.slice(Math.max(0, at - 16), at);
  return at === 0 || /[.?!]\s+$/.test(before) || /^\s+$/.test(s.slice(0, at));
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
  t = foldCase(latexToPlain(t)).replaceAll("**", "^");
  t = t.replace(/\s+/g, " ").trim();
  t = dropThousandsSeparators(t);
  t = normalizeSpacing(t);
  t = dropAtomParens(t);
  t = canonicalNumbers(t);
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
  /** The normalized problem with every number replaced by `#`. */
  template: string;
  /** The numbers as floats: for ordering and display; large integers lose precision here. */
  params: number[];
  /** The numbers as exact canonical text (`-12`, `0.75`, any number of digits): what programs get. */
  literals: string[];
}

/** The normalized problem with every number replaced by `#`, and those numbers in order of appearance. */
export function problemTemplate(text: string): ProblemTemplate {
  const normalized = normalizeProblem(text);
  const params: number[] = [];
  const literals: string[] = [];
  let template = "";
  let last = 0;
  for (const span of scanNumbers(normalized)) {
    template += normalized.slice(last, span.start) + TEMPLATE_SLOT;
    params.push(span.value);
    literals.push(span.text);
    last = span.end;
  }
  return { template: template + normalized.slice(last), params, literals };
}
