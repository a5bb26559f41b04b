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

import { badRequest } from "./errors.js";
import { sha256Hex } from "./hash.js";

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

/** LaTeX commands that stand for a plain symbol or word. */
const LATEX_SYMBOLS: Record<string, string> = {
  cdot: "*",
  times: "*",
  ast: "*",
  div: "/",
  pm: "+-",
  mp: "-+",
  le: "<=",
  leq: "<=",
  leqslant: "<=",
  ge: ">=",
  geq: ">=",
  geqslant: ">=",
  ne: "!=",
  neq: "!=",
  lt: "<",
  gt: ">",
  approx: "~=",
  quad: " ",
  qquad: " ",
  enspace: " ",
  thinspace: " ",
  medspace: " ",
  thickspace: " ",
  space: " ",
  dots: "...",
  ldots: "...",
  cdots: "...",
  dotsc: "...",
  dotsb: "...",
  infty: "infinity",
  degree: " degrees",
  circ: " degrees",
  percent: "%",
  lfloor: "floor(",
  rfloor: ")",
  lceil: "ceil(",
  rceil: ")",
  mid: "|",
  vert: "|",
  lvert: "|",
  rvert: "|",
  to: "->",
  rightarrow: "->",
  bmod: " mod ",
  mod: " mod ",
};
/** Sizing and style commands with no plain-text counterpart. */
const LATEX_DROP = new Set([
  "left",
  "right",
  "middle",
  "big",
  "Big",
  "bigg",
  "Bigg",
  "bigl",
  "bigr",
  "Bigl",
  "Bigr",
  "biggl",
  "biggr",
  "Biggl",
  "Biggr",
  "displaystyle",
  "textstyle",
  "limits",
  "nolimits",
]);
/** Commands whose one argument is kept as is. */
const LATEX_UNWRAP = new Set([
  "text",
  "textrm",
  "textit",
  "textbf",
  "textsf",
  "texttt",
  "textnormal",
  "mathrm",
  "mathbf",
  "mathit",
  "mathsf",
  "mathtt",
  "mathbb",
  "mathcal",
  "operatorname",
  "mbox",
  "hbox",
  "emph",
  "boldsymbol",
  "bm",
  "overline",
  "underline",
  "vec",
  "hat",
  "bar",
  "tilde",
  "widehat",
  "widetilde",
]);
/** Capital Greek letters as LaTeX commands, kept as the symbols (case folding would merge them). */
const GREEK_CAPITALS: Record<string, string> = {
  Gamma: "Γ",
  Delta: "Δ",
  Theta: "Θ",
  Lambda: "Λ",
  Xi: "Ξ",
  Pi: "Π",
  Sigma: "Σ",
  Upsilon: "Υ",
  Phi: "Φ",
  Psi: "Ψ",
  Omega: "Ω",
};
const LATEX_FRACS = new Set(["frac", "dfrac", "tfrac", "cfrac"]);
const LATEX_BINOMS = new Set(["binom", "dbinom", "tbinom"]);

const isLetter = (c: string | undefined) => c !== undefined && /[a-zA-Z]/.test(c);
/** A lone (possibly signed) number or a single letter: needs no parentheses as an operand. */
const isAtom = (s: string) => /^(?:-?\d+(?:\.\d+)?|[a-zA-Z])$/.test(s);
const parenthesize = (s: string) => (isAtom(s) ? s : `(${s})`);

interface Arg {
  raw: string;
  braced: boolean;
  end: number;
}

/** Index of the `close` that balances the `open` at `start`, skipping escaped ones; -1 if none (`[..]`). */
function matching(s: string, start: number, open: string, close: string): number {
  let depth = 0;
  for (let i = start; i < s.length; i++) {
    const c = s[i];
    if (c === "\\") {
      i++;
      continue;
    }
    if (c === open) depth++;
    else if (c === close && --depth === 0) return i;
  }
  return -1;
}

/** One macro argument at `i`: a braced group, a control sequence, or one character. */
function readArg(s: string, i: number): Arg {
  let j = i;
  while (s[j] === " ") j++;
  const c = s[j];
  if (c === undefined) return { raw: "", braced: false, end: j };
  if (c === "{") {
    const close = closingBrace(s, j);
    if (close >= 0) return { raw: s.slice(j + 1, close), braced: true, end: close + 1 };
    return { raw: "", braced: false, end: j + 1 };
  }
  if (c === "\\") {
    let k = j + 1;
    if (isLetter(s[k])) while (isLetter(s[k])) k++;
    else k++;
    return { raw: s.slice(j, k), braced: false, end: k };
  }
  return { raw: c, braced: false, end: j + 1 };
}

/**
 * Most nested LaTeX groups a problem may have: the conversion recurses per group, and a flood of
 * nested braces would otherwise exhaust the stack (a 500) instead of being refused (a 400).
 */
export const MAX_LATEX_DEPTH = 64;

/**
 * For each `{` of `s`, the index of the `}` that balances it (escaped braces skipped), else -1:
 * one pass, where matching from every brace would be quadratic in a flood of unbalanced ones.
 */
function braceTable(s: string): Int32Array {
  const close = new Int32Array(s.length).fill(-1);
  const open: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "\\") i++;
    else if (c === "{") open.push(i);
    else if (c === "}") {
      const o = open.pop();
      if (o !== undefined) close[o] = i;
    }
  }
  return close;
}

/** The brace tables of the strings one conversion works on; emptied when it ends. */
const braceTables = new Map<string, Int32Array>();

/** Index of the `}` that balances the `{` at `at` in `s`; -1 if none. */
function closingBrace(s: string, at: number): number {
  let table = braceTables.get(s);
  if (!table) {
    table = braceTable(s);
    braceTables.set(s, table);
  }
  return table[at] ?? -1;
}

/** LaTeX markup to plain text; text without markup passes through unchanged. */
function latexToPlain(s: string): string {
  try {
    return convertLatex(s, 0);
  } finally {
    braceTables.clear();
  }
}

/** latexToPlain on a group `depth` levels down. */
function convertLatex(s: string, depth: number): string {
  if (depth > MAX_LATEX_DEPTH)
    throw badRequest("problem_too_nested", `The problem nests LaTeX groups deeper than ${MAX_LATEX_DEPTH}.`, {
      maxDepth: MAX_LATEX_DEPTH,
    });
  let out = "";
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (c === "\\") {
      const next = s[i + 1];
      if (next === undefined) {
        i++;
      } else if (isLetter(next)) {
        let k = i + 1;
        while (isLetter(s[k])) k++;
        const name = s.slice(i + 1, k);
        if (s[k] === "*") k++;
        const r = latexCommand(name, s, k, out, depth);
        out += r.text;
        i = r.end;
      } else {
        out += controlSymbol(next, s, i, out);
        i += 2;
      }
    } else if (c === "$") {
      i++;
    } else if (c === "~") {
      out += s[i + 1] === "=" ? "~" : " ";
      i++;
    } else if (c === "^" || c === "_") {
      const arg = readArg(s, i + 1);
      const raw = arg.raw.trim();
      if (c === "^" && (raw === "\\circ" || raw === "\\degree")) out += " degrees";
      else if (arg.braced) out += `${c}(${convertLatex(arg.raw, depth + 1).trim()})`;
      else out += c + convertLatex(arg.raw, depth + 1);
      i = arg.end;
    } else if (c === "{") {
      if (s.startsWith("{,}", i)) {
        out += ",";
        i += 3;
      } else {
        const close = closingBrace(s, i);
        if (close < 0) {
          out += c;
          i++;
        } else {
          out += `{${convertLatex(s.slice(i + 1, close), depth + 1)}}`;
          i = close + 1;
        }
      }
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** A control symbol `\x` (x not a letter). */
function controlSymbol(x: string, s: string, i: number, out: string): string {
  switch (x) {
    case ",":
      // `1\,000`: a thin space used as a thousands separator joins the digits.
      return /\d$/.test(out) && /^\d{3}(?!\d)/.test(s.slice(i + 2)) ? "" : " ";
    case ";":
    case ":":
    case "!":
    case " ":
    case "\\":
    case "(":
    case ")":
    case "[":
    case "]":
      return " ";
    case "$":
      return "";
    default:
      return x;
  }
}

/** A control word `\name` whose arguments start at `k`; `out` is the text produced so far. */
function latexCommand(
  name: string,
  s: string,
  k: number,
  out: string,
  depth: number,
): { text: string; end: number } {
  const plain = (x: string) => convertLatex(x, depth + 1);
  const symbol = LATEX_SYMBOLS[name];
  if (symbol !== undefined) return { text: symbol, end: k };
  if (LATEX_DROP.has(name)) {
    let j = k;
    while (s[j] === " ") j++;
    // `\left.` and `\right.` are invisible delimiters.
    return { text: "", end: s[j] === "." ? j + 1 : k };
  }
  if (LATEX_UNWRAP.has(name)) {
    const arg = readArg(s, k);
    return { text: plain(arg.raw), end: arg.end };
  }
  if (name === "begin" || name === "end") return { text: " ", end: readArg(s, k).end };
  if (LATEX_FRACS.has(name)) {
    const a = readArg(s, k);
    const b = readArg(s, a.end);
    const body = `${parenthesize(plain(a.raw).trim())}/${parenthesize(plain(b.raw).trim())}`;
    const prev = out.at(-1);
    const next = s[b.end];
    if (
      (prev !== undefined && /[a-zA-Z)^/]/.test(prev)) ||
      (next !== undefined && /[a-zA-Z0-9(^]/.test(next))
    )
      return { text: `(${body})`, end: b.end };
    // A mixed number `2\frac{1}{2}` is typed `2 1/2`.
    return { text: prev !== undefined && /\d/.test(prev) ? ` ${body}` : body, end: b.end };
  }
  if (LATEX_BINOMS.has(name)) {
    const a = readArg(s, k);
    const b = readArg(s, a.end);
    return { text: `binom(${plain(a.raw).trim()}, ${plain(b.raw).trim()})`, end: b.end };
  }
  if (name === "sqrt") {
    let j = k;
    while (s[j] === " ") j++;
    let index: string | undefined;
    if (s[j] === "[") {
      const close = matching(s, j, "[", "]");
      if (close > 0) {
        index = plain(s.slice(j + 1, close)).trim();
        j = close + 1;
      }
    }
    const arg = readArg(s, j);
    const radicand = plain(arg.raw).trim();
    if (index === undefined) return { text: `sqrt(${radicand})`, end: arg.end };
    return { text: `${parenthesize(radicand)}^(1/${parenthesize(index)})`, end: arg.end };
  }
  if (name === "pmod") {
    const arg = readArg(s, k);
    return { text: ` (mod ${plain(arg.raw).trim()})`, end: arg.end };
  }
  // Capital Greek letters keep their case as symbols (`\Gamma` is not `\gamma`).
  return { text: GREEK_CAPITALS[name] ?? name, end: k };
}

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
