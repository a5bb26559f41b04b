/**
 * LaTeX markup to what a person types, for problem normalization (shared/normalize.ts lists the
 * rules): `\frac{a}{b}` -> `a/b`, `\sqrt{x}` -> `sqrt(x)`, `^{..}` -> `^(..)`, symbol commands to
 * their characters or words, wrappers unwrapped, sizing dropped. Groups nest at most
 * MAX_LATEX_DEPTH deep (a 400 `problem_too_nested` beyond).
 */
import { badRequest } from "./errors.js";

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
export function latexToPlain(s: string): string {
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
      // `1\,000`: a thin space used as a thousands separator is one (shared/normalize keeps it).
      return /\d$/.test(out) && /^\d{3}(?!\d)/.test(s.slice(i + 2)) ? "," : " ";
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
