/**
 * Synthetic problem families for the embedded model's graft transcripts (docs/model.md): problem
 * text put together from random sentences (everyday nouns, verbs and people), each number a
 * parameter, and a random Python program over those parameters in the shapes the real families'
 * programs have (arithmetic with precedence, rounding, integer division and remainders, `math`
 * functions, fractions, digit and divisor sums, intermediate variables). The program has nothing to
 * do with the words, so a graft transcript built on one (a verified sibling's block, then a query of
 * the same family with new numbers) can only be completed by copying the block's program: the model
 * learns to graft, not to recall. None of this text comes from the real families, so the held-out
 * families stay out of the data.
 *
 * Answers are what the program prints on the instance's numbers, run by python3 (as the product's
 * sandbox does: PARAMS evaluated from the literals, the last stdout line).
 */
import { spawnSync } from "node:child_process";
import type { Family, Params, Rng } from "../families/family.js";

const NOUNS: readonly (readonly [string, string])[] = [
  ["apple", "apples"],
  ["lamp", "lamps"],
  ["book", "books"],
  ["chair", "chairs"],
  ["ticket", "tickets"],
  ["coin", "coins"],
  ["shell", "shells"],
  ["brick", "bricks"],
  ["plant", "plants"],
  ["cup", "cups"],
  ["candle", "candles"],
  ["kite", "kites"],
  ["rope", "ropes"],
  ["stone", "stones"],
  ["towel", "towels"],
  ["flower", "flowers"],
  ["bottle", "bottles"],
  ["tile", "tiles"],
  ["sock", "socks"],
  ["nail", "nails"],
  ["carrot", "carrots"],
  ["melon", "melons"],
  ["shirt", "shirts"],
  ["poster", "posters"],
  ["brush", "brushes"],
  ["plate", "plates"],
  ["bowl", "bowls"],
  ["map", "maps"],
  ["badge", "badges"],
  ["ribbon", "ribbons"],
  ["seed", "seeds"],
  ["log", "logs"],
  ["page", "pages"],
  ["song", "songs"],
  ["photo", "photos"],
  ["drum", "drums"],
  ["bell", "bells"],
  ["glove", "gloves"],
  ["hat", "hats"],
  ["key", "keys"],
  ["puzzle", "puzzles"],
  ["toy", "toys"],
  ["robot", "robots"],
  ["cake", "cakes"],
  ["pie", "pies"],
  ["egg", "eggs"],
  ["lemon", "lemons"],
  ["onion", "onions"],
  ["potato", "potatoes"],
  ["peach", "peaches"],
  ["feather", "feathers"],
  ["pebble", "pebbles"],
  ["wheel", "wheels"],
  ["engine", "engines"],
  ["panel", "panels"],
  ["parcel", "parcels"],
  ["letter", "letters"],
  ["blanket", "blankets"],
  ["pillow", "pillows"],
  ["vase", "vases"],
];
const CONTAINERS: readonly string[] = [
  "box",
  "crate",
  "bag",
  "basket",
  "shelf",
  "drawer",
  "tray",
  "sack",
  "barrel",
  "cart",
  "bucket",
  "case",
  "room",
  "van",
  "pack",
  "row",
  "stack",
  "carton",
  "pile",
  "bin",
];
const VERBS: readonly (readonly [string, string])[] = [
  ["collects", "collect"],
  ["paints", "paint"],
  ["sells", "sell"],
  ["buys", "buy"],
  ["packs", "pack"],
  ["stacks", "stack"],
  ["sorts", "sort"],
  ["counts", "count"],
  ["washes", "wash"],
  ["bakes", "bake"],
  ["plants", "plant"],
  ["repairs", "repair"],
  ["delivers", "deliver"],
  ["wraps", "wrap"],
  ["prints", "print"],
  ["carries", "carry"],
  ["folds", "fold"],
  ["loads", "load"],
  ["labels", "label"],
  ["finds", "find"],
];
const ADJECTIVES: readonly string[] = [
  "red",
  "small",
  "large",
  "old",
  "new",
  "green",
  "heavy",
  "light",
  "wooden",
  "blue",
  "shiny",
  "plain",
];
const UNITS: readonly string[] = [
  "cm",
  "m",
  "kg",
  "g",
  "litres",
  "ml",
  "km",
  "minutes",
  "hours",
  "days",
  "degrees",
];
/** Parameter names like the real families' (no Python builtins, nothing the templates below use). */
const IDENTS: readonly string[] = [
  "a",
  "b",
  "c",
  "e",
  "f",
  "n",
  "k",
  "x",
  "y",
  "z",
  "p",
  "r",
  "s",
  "t",
  "u",
  "v",
  "w",
  "g",
  "h",
  "count",
  "price",
  "total",
  "rate",
  "hours",
  "width",
  "length",
  "height",
  "speed",
  "distance",
  "start",
  "each",
  "size",
  "cost",
  "paid",
  "parts",
  "share",
  "base",
  "step",
  "first",
  "last",
  "days",
  "weeks",
  "items",
  "boxes",
  "extra",
  "gain",
  "loss",
  "n1",
  "n2",
  "p1",
  "p2",
  "h1",
  "m1",
  "x1",
  "y1",
  "red",
  "blue",
  "pct",
  "years",
  "principal",
  "kmh",
  "grams",
  "litres",
  "target",
  "prize",
  "sections",
  "winning",
  "amount",
];
/** Names the program templates use for their own variables. */
const RESERVED = new Set([
  "i",
  "ch",
  "big",
  "acc",
  "math",
  "Fraction",
  "tmp",
  "part",
  "sub",
  "mid",
  "whole",
  "inner",
  "total_",
]);

export interface SyntheticFamily extends Family {
  /** Parameters that must stay small (factorials, combinations, loops, exponents). */
  small: ReadonlySet<string>;
}

interface Node {
  text: string;
  prec: number;
}

const PREC: Record<string, number> = { "+": 1, "-": 1, "*": 2, "/": 2, "//": 2, "%": 2, "**": 4 };

function combine(op: string, a: Node, b: Node): Node {
  const p = PREC[op] as number;
  const left = a.prec < p || (op === "**" && a.prec <= p) ? `(${a.text})` : a.text;
  const right = b.prec < p || (b.prec === p && op !== "+" && op !== "*") ? `(${b.text})` : b.text;
  return { text: `${left} ${op} ${right}`, prec: p };
}

function leaf(text: string): Node {
  return { text, prec: 9 };
}

const CONSTANTS = [
  "2",
  "3",
  "4",
  "5",
  "7",
  "10",
  "12",
  "24",
  "60",
  "100",
  "1000",
  "3600",
  "0.5",
  "1.5",
  "9",
  "32",
  "180",
  "4.184",
];

/** A random arithmetic expression using every leaf once (plus, sometimes, a constant or two). */
function arithmetic(leaves: readonly string[], rng: Rng, small: Set<string>): Node {
  const nodes: Node[] = leaves.map(leaf);
  const constants = leaves.length === 1 ? rng.int(1, 2) : rng.next() < 0.45 ? rng.int(1, 2) : 0;
  for (let i = 0; i < constants; i++) nodes.push(leaf(rng.pick(CONSTANTS)));
  // Shuffle: the program uses the numbers in an order unrelated to the text's.
  for (let i = nodes.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [nodes[i], nodes[j]] = [nodes[j] as Node, nodes[i] as Node];
  }
  while (nodes.length > 1) {
    const i = rng.int(0, nodes.length - 2);
    const a = nodes[i] as Node;
    const b = nodes[i + 1] as Node;
    const roll = rng.next();
    let op =
      roll < 0.3 ? "*" : roll < 0.55 ? "+" : roll < 0.75 ? "-" : roll < 0.85 ? "//" : roll < 0.93 ? "/" : "%";
    if (b.prec === 9 && rng.next() < 0.04 && /^[a-z]/.test(b.text)) {
      op = "**";
      small.add(b.text);
    }
    nodes.splice(i, 2, combine(op, a, b));
  }
  return nodes[0] as Node;
}

/** A random program over `params` (Python statements without the PARAMS line). */
function randomProgram(params: readonly string[], rng: Rng, small: Set<string>): string {
  const ps = [...params];
  const e = (names: readonly string[]) => arithmetic(names, rng, small).text;
  const roll = rng.next();
  const one = ps.length === 1;
  if (roll < 0.3) return `print(${e(ps)})`;
  if (roll < 0.47) return `print(round(${e(ps)}, ${rng.pick(["2", "2", "3", "1"])}))`;
  if (roll < 0.52) return `print(abs(${e(ps)}))`;
  if (roll < 0.6 && ps.length >= 2) {
    // An intermediate variable, as several real programs have.
    const cut = rng.int(1, ps.length - 1);
    const name = rng.pick(["tmp", "part", "sub", "mid", "whole", "step1", "inner", "acc"]);
    return `${name} = ${e(ps.slice(0, cut))}\nprint(${e([name, ...ps.slice(cut)])})`;
  }
  if (roll < 0.66) {
    const f = rng.pick(["gcd", "comb", "perm", "factorial", "isqrt", "sqrt", "pi"]);
    if ((f === "gcd" || f === "comb" || f === "perm") && ps.length >= 2) {
      const cut = rng.int(1, ps.length - 1);
      if (f !== "gcd") for (const p of ps) small.add(p);
      return `import math\nprint(math.${f}(${e(ps.slice(0, cut))}, ${e(ps.slice(cut))}))`;
    }
    if (f === "factorial") {
      for (const p of ps) small.add(p);
      return `import math\nprint(math.factorial(${e(ps)}))`;
    }
    if (f === "isqrt") return `import math\nprint(math.isqrt(${e(ps)}))`;
    if (f === "sqrt") return `import math\nprint(round(math.sqrt(${e(ps)}), 2))`;
    const t = e(ps);
    return `import math\nprint(round(math.pi * ${t.includes(" ") ? `(${t})` : t}, 2))`;
  }
  if (roll < 0.72 && ps.length >= 2) {
    const cut = rng.int(1, ps.length - 1);
    return `from fractions import Fraction\nprint(Fraction(${e(ps.slice(0, cut))}, ${e(ps)}))`;
  }
  if (roll < 0.76 && ps.length >= 2) {
    const [x, y, ...rest] = ps as [string, string, ...string[]];
    small.add(y);
    const m = rest.length ? ` + ${e(rest)}` : "";
    return `print(pow(${x}, ${y}, 10)${m})`;
  }
  const free = (...names: string[]) => names.every((n) => !ps.includes(n));
  if (roll < 0.8 && one && free("d")) {
    small.add(ps[0] as string);
    return `print(sum(1 for d in range(1, ${ps[0]} + 1) if ${ps[0]} % d == 0))`;
  }
  if (roll < 0.84) return `print(sum(int(ch) for ch in str(${e(ps)})))`;
  if (roll < 0.87 && one && free("m", "q")) {
    small.add(ps[0] as string);
    return `m, q, big = ${ps[0]}, 2, 1\nwhile q * q <= m:\n    while m % q == 0:\n        big, m = q, m // q\n    q += 1\nprint(m if m > 1 else big)`;
  }
  if (roll < 0.9 && ps.length >= 2) {
    const [lo, hi] = ps as [string, string];
    small.add(lo);
    small.add(hi);
    const tail = ps.length > 2 ? ` * (${e(ps.slice(2))})` : "";
    return `total_ = 0\nfor i in range(${lo}, ${hi} + 1):\n    total_ += i\nprint(total_${tail})`;
  }
  const t = e(ps);
  const wrapped = t.includes(" ") ? `(${t})` : t;
  if (roll < 0.94) return `print(${wrapped} % ${rng.pick(["24", "7", "10", "12", "60"])})`;
  return `print(${wrapped} // ${rng.pick(["2", "3", "4", "10", "100"])})`;
}

function plural(s: string): string {
  return /(x|s|sh|ch)$/.test(s) ? `${s}es` : `${s}s`;
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** A sentence naming the given slots (one or two), about random things. */
function setupSentence(slots: readonly string[], rng: Rng): string {
  const [n, ns] = rng.pick(NOUNS);
  const [n2, n2s] = rng.pick(NOUNS);
  const [v, vb] = rng.pick(VERBS);
  const c = rng.pick(CONTAINERS);
  const adj = rng.pick(ADJECTIVES);
  const unit = rng.pick(UNITS);
  const [x, y] = slots.map((s) => `{${s}}`) as [string, string | undefined];
  if (y !== undefined)
    return rng.pick([
      `{@person} ${v} ${x} ${ns} and ${y} ${n2s}.`,
      `A ${c} is ${x} ${unit} long and ${y} ${unit} wide.`,
      `There are ${x} ${adj} ${ns} and ${y} ${n2s} in the ${c}.`,
      `{@person} ${v} ${x} ${ns} on Monday and ${y} on Tuesday.`,
      `Each of the ${x} ${plural(c)} holds ${y} ${ns}.`,
      `Between ${x} and ${y}, {@person} ${v} the ${ns}.`,
      `{@person} has ${x} ${ns}, and {@person2} has ${y}.`,
    ]);
  return rng.pick([
    `{@person} has ${x} ${ns}.`,
    `There are ${x} ${ns} in the ${c}.`,
    `Each ${c} holds ${x} ${ns}.`,
    `A ${n} costs $${x}.`,
    `{@person} ${v} ${x} ${adj} ${ns}.`,
    `The ${c} weighs ${x} ${unit}.`,
    `It takes ${x} minutes to ${vb} one ${n}.`,
    `The ${n} is ${x} ${unit} long.`,
    `${x}% of the ${ns} are ${adj}.`,
    `{@person} ${v} ${x} ${ns} every day.`,
    `The rate is ${x} ${ns} per hour.`,
    `After that, {@person} ${v} ${x} more ${ns}.`,
    `{@person} gives ${x} ${ns} to {@person2}.`,
    `The club owns ${x} ${ns}.`,
    `A ${c} of ${ns} sells for $${x}.`,
    `Every ${n2} needs ${x} ${ns}.`,
    `The ${adj} ${n} is worth ${x} points.`,
    `{@person2} ${v} ${x} ${ns} and keeps them in a ${c}.`,
    `A ${n} travels ${x} ${unit}.`,
    `The price goes up by ${x}% this week.`,
    `{@person} waits ${x} ${unit}.`,
    `A ${c} of ${x} ${n2s} is on the table.`,
    `${cap(n2s)} come in packs of ${x}.`,
    `The score is ${x}.`,
  ]);
}

function question(slot: string | undefined, rng: Rng): string {
  const [n, ns] = rng.pick(NOUNS);
  const [, vb] = rng.pick(VERBS);
  const c = rng.pick(CONTAINERS);
  const unit = rng.pick(UNITS);
  if (slot !== undefined) {
    const x = `{${slot}}`;
    return rng.pick([
      `How many ${ns} are there after ${x} days?`,
      `What is the total after ${x} weeks?`,
      `How much does {@person} pay for ${x} ${ns}?`,
      `How many ${ns} fit in ${x} ${plural(c)}?`,
      `What is the result for ${x} ${ns}?`,
      `If {@person} ${vb}s ${x} of them, how many ${ns} are left?`,
      `What is the value in ${unit} after ${x} rounds?`,
    ]);
  }
  return rng.pick([
    `How many ${ns} does {@person} have now?`,
    "What is the total, in dollars?",
    `How much does {@person} ${vb} in all?`,
    "What number do you get?",
    `What is the answer, to two decimal places?`,
    `How many ${ns} are left?`,
    `How long does it take, in ${unit}?`,
    `What is the probability that a ${n} picked at random is chosen?`,
    `How many ways can the ${ns} be arranged?`,
    `What is the final count of ${ns}?`,
    `Find the amount for the ${c}.`,
    "What is the result?",
    `How many ${unit} is that?`,
    `Work out the size of the ${c}.`,
  ]);
}

/** A parameter name: mostly like the real families' (IDENTS), else made from a noun (`lamps`, `num_lamps`, `lamp_count`). */
function paramName(rng: Rng): string {
  const roll = rng.next();
  if (roll < 0.6) return rng.pick(IDENTS);
  if (roll < 0.7)
    return rng.pick([
      "d",
      "m",
      "q",
      "j",
      "o",
      "l",
      "i2",
      "k1",
      "k2",
      "a1",
      "b1",
      "c1",
      "d1",
      "t1",
      "t2",
      "r1",
      "s1",
    ]);
  const [one, many] = rng.pick(NOUNS);
  return rng.pick([
    one,
    many,
    `num_${many}`,
    `${one}_count`,
    `total_${many}`,
    `${one}s_each`,
    `${one}_price`,
    `${one}_size`,
  ]);
}

function pickNames(count: number, rng: Rng): string[] {
  const out: string[] = [];
  for (let tries = 0; out.length < count && tries < 100; tries++) {
    const name = paramName(rng);
    if (!RESERVED.has(name) && !out.includes(name)) out.push(name);
  }
  return out;
}

/** A random family: 1 to 5 parameters, sentences naming each once, a random program over them. */
export function syntheticFamily(id: string, rng: Rng): SyntheticFamily {
  const roll = rng.next();
  const count = roll < 0.15 ? 1 : roll < 0.5 ? 2 : roll < 0.8 ? 3 : roll < 0.95 ? 4 : 5;
  const params = pickNames(count, rng);
  const small = new Set<string>();
  const program = randomProgram(params, rng, small);
  // The text names the parameters in a random order (the PARAMS line follows the text).
  const order = [...params];
  for (let i = order.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [order[i], order[j]] = [order[j] as string, order[i] as string];
  }
  const sentences: string[] = [];
  const inQuestion = order.length > 1 && rng.next() < 0.25 ? order.pop() : undefined;
  for (let i = 0; i < order.length; ) {
    const two = i + 1 < order.length && rng.next() < 0.3;
    sentences.push(setupSentence(order.slice(i, i + (two ? 2 : 1)), rng));
    i += two ? 2 : 1;
  }
  sentences.push(question(inQuestion, rng));
  const phrasing = sentences.join(" ");
  const method = rng.pick([
    "Combine the numbers as the program below does.",
    "Work through the quantities one step at a time.",
    "Apply the rule for this kind of problem to the numbers.",
    "Put the numbers into the formula and evaluate it.",
    "Compute the result from the given values.",
    "Use the numbers in the order the formula needs them.",
  ]);
  const sample = (r: Rng): Params => {
    const values: Record<string, number> = {};
    for (const p of params) {
      const kind = r.next();
      values[p] = small.has(p)
        ? r.int(2, 12)
        : kind < 0.55
          ? r.int(2, 40)
          : kind < 0.8
            ? r.int(10, 300)
            : kind < 0.9
              ? r.int(100, 2000)
              : r.int(101, 9999) / 100;
    }
    return values;
  };
  return {
    id,
    domain: "arithmetic",
    params,
    phrasings: [phrasing],
    method,
    program,
    sample,
    answer: () => "",
    small,
  };
}

/**
 * What each program prints on its numbers (python3, as the sandbox runs it: PARAMS evaluated from
 * the literals, the last non-empty stdout line), or null where it fails, runs long or prints nothing.
 */
export function runPrograms(
  jobs: readonly { program: string; literals: readonly string[] }[],
): (string | null)[] {
  const script = `
import sys, json, io, contextlib, signal
def stop(*_): raise TimeoutError()
signal.signal(signal.SIGALRM, stop)
for line in sys.stdin:
    job = json.loads(line)
    out = io.StringIO()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with contextlib.redirect_stdout(out):
            exec(job["program"], {"PARAMS": [eval(x) for x in job["literals"]]})
        signal.setitimer(signal.ITIMER_REAL, 0)
        lines = [l.strip() for l in out.getvalue().split("\\n") if l.strip()]
        print(json.dumps(lines[-1] if lines else None))
    except BaseException:
        signal.setitimer(signal.ITIMER_REAL, 0)
        print("null")
`;
  const input = jobs.map((j) => JSON.stringify({ program: j.program, literals: j.literals })).join("\n");
  const run = spawnSync("python3", ["-c", script], { input, encoding: "utf8", maxBuffer: 1 << 30 });
  if (run.status !== 0) throw new Error(`python3 failed: ${run.stderr}`);
  const lines = run.stdout.trim().split("\n");
  if (lines.length !== jobs.length)
    throw new Error(`python3 answered ${lines.length} of ${jobs.length} programs`);
  return lines.map((l) => JSON.parse(l) as string | null);
}

const OPERATORS = [" + ", " - ", " * ", " // ", " / "];

/**
 * A program like `program` but not the same: one constant replaced, one operator swapped, or the
 * printed value changed, so that a graft whose block holds it can only be completed by copying
 * the block (the model's memory of the family's own program would be wrong). Null if no change fits.
 */
export function mutatedProgram(program: string, rng: Rng): string | null {
  const lines = program.trim().split("\n");
  const last = lines.length - 1;
  const roll = rng.next();
  const constants = [...program.matchAll(/(?<![A-Za-z_0-9.])\d+(?:\.\d+)?(?![A-Za-z_0-9.])/g)];
  if (roll < 0.4 && constants.length) {
    const m = rng.pick(constants);
    const to = rng.pick(CONSTANTS.filter((c) => c !== m[0]));
    const at = m.index ?? 0;
    return program.slice(0, at) + to + program.slice(at + m[0].length);
  }
  const ops = OPERATORS.flatMap((op) =>
    [...program.matchAll(new RegExp(op.replace(/[*+/]/g, "\\$&"), "g"))].map((m) => ({
      op,
      at: m.index ?? 0,
    })),
  );
  if (roll < 0.8 && ops.length) {
    const { op, at } = rng.pick(ops);
    const to = rng.pick(OPERATORS.filter((o) => o !== op));
    return program.slice(0, at) + to + program.slice(at + op.length);
  }
  const print = /^print\((.*)\)$/.exec(lines[last] ?? "");
  if (!print) return null;
  const value = print[1] as string;
  lines[last] = rng.pick([
    `print(${value} + ${rng.pick(["1", "2", "10"])})`,
    `print(2 * ${value.includes(" ") ? `(${value})` : value})`,
    `print(abs(${value}))`,
    `print(${value.includes(" ") ? `(${value})` : value} % ${rng.pick(["7", "10", "100"])})`,
  ]);
  return lines.join("\n");
}
