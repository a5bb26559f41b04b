/**
 * Variations of the training phrasings, so the small model learns what a family's problems have in
 * common rather than five exact sentences: the setup of one phrasing with the question of another
 * (when together they name every parameter once), common question words swapped for others,
 * everyday nouns (objects, containers, colours, people, shops) swapped within their kind, and a
 * short lead-in or closing now and then. Only training phrasings are varied; the held-out
 * phrasing of each family and the held-out families never enter the data.
 */
import type { Family, Rng } from "../families/family.js";
import { phrasingOrder } from "../families/render.js";

/** Interchangeable ways to ask; each group's members replace one another. */
const SWAPS: readonly (readonly string[])[] = [
  ["What is", "Find", "Work out", "Calculate", "Determine", "Compute", "Tell me"],
  ["How many", "What number of"],
  ["buys", "purchases", "gets", "picks up"],
  ["costs", "is priced at", "sells for"],
  ["altogether", "in total", "in all", "overall"],
  ["rounded to two decimal places", "to two decimal places", "correct to two decimal places"],
  ["has", "owns", "holds"],
  ["gives", "hands"],
  ["then", "and then", "after that"],
  ["a friend", "a neighbour", "a classmate"],
  ["cm", "centimetres", "centimeters"],
  ["km", "kilometres", "kilometers"],
  ["km/h", "kilometres per hour"],
  ["metres", "meters"],
  ["litres", "liters"],
  ["ml", "millilitres"],
  ["kg", "kilograms"],
  ["colour", "color"],
  ["in dollars", "in $", "in dollars and cents"],
  ["now", "at the end", "in the end"],
  ["What", "Which"],
  ["Solve", "Find x in"],
];
/**
 * Words a problem's math does not depend on, by kind, as [singular, plural]; within one problem
 * each is replaced by a different member of its kind, the same everywhere it occurs.
 */
const NOUN_KINDS: readonly (readonly (readonly [string, string])[])[] = [
  [
    ["marble", "marbles"],
    ["bead", "beads"],
    ["counter", "counters"],
    ["ball", "balls"],
    ["sweet", "sweets"],
    ["pen", "pens"],
    ["pencil", "pencils"],
    ["sticker", "stickers"],
    ["stamp", "stamps"],
    ["card", "cards"],
    ["token", "tokens"],
    ["button", "buttons"],
    ["shell", "shells"],
    ["cookie", "cookies"],
    ["apple", "apples"],
    ["pear", "pears"],
  ],
  [
    ["bag", "bags"],
    ["box", "boxes"],
    ["jar", "jars"],
    ["drawer", "drawers"],
    ["basket", "baskets"],
    ["tin", "tins"],
    ["crate", "crates"],
  ],
  [
    ["red", "red"],
    ["blue", "blue"],
    ["green", "green"],
    ["yellow", "yellow"],
    ["white", "white"],
    ["black", "black"],
    ["pink", "pink"],
    ["purple", "purple"],
  ],
  [
    ["student", "students"],
    ["child", "children"],
    ["friend", "friends"],
    ["player", "players"],
    ["guest", "guests"],
    ["worker", "workers"],
    ["member", "members"],
  ],
  [
    ["muffin", "muffins"],
    ["cake", "cakes"],
    ["pie", "pies"],
    ["bun", "buns"],
    ["biscuit", "biscuits"],
    ["orange", "oranges"],
    ["lemon", "lemons"],
    ["egg", "eggs"],
    ["cupcake", "cupcakes"],
  ],
  [
    ["car", "cars"],
    ["bus", "buses"],
    ["train", "trains"],
    ["van", "vans"],
    ["truck", "trucks"],
  ],
  [
    ["film", "films"],
    ["movie", "movies"],
    ["show", "shows"],
    ["concert", "concerts"],
    ["lecture", "lectures"],
  ],
  [
    ["ribbon", "ribbons"],
    ["rope", "ropes"],
    ["string", "strings"],
    ["cable", "cables"],
    ["wire", "wires"],
  ],
  [
    ["jug", "jugs"],
    ["pitcher", "pitchers"],
    ["bottle", "bottles"],
    ["flask", "flasks"],
    ["tank", "tanks"],
  ],
  [
    ["jacket", "jackets"],
    ["coat", "coats"],
    ["shirt", "shirts"],
    ["tent", "tents"],
    ["lamp", "lamps"],
    ["bike", "bikes"],
    ["watch", "watches"],
  ],
  [
    ["test", "tests"],
    ["quiz", "quizzes"],
    ["exam", "exams"],
    ["game", "games"],
    ["match", "matches"],
  ],
  [
    ["shop", "shops"],
    ["store", "stores"],
    ["market", "markets"],
    ["kiosk", "kiosks"],
    ["stall", "stalls"],
  ],
];

/** Replaces the nouns of NOUN_KINDS outside the slots (`{...}`), one consistent mapping per problem. */
function swapNouns(text: string, rng: Rng): string {
  const mapping = new Map<string, string>();
  for (const kind of NOUN_KINDS) {
    const targets = [...kind];
    for (const [singular, plural] of kind) {
      const at = rng.int(0, targets.length - 1);
      const [toSingular, toPlural] = targets.splice(at, 1)[0] as readonly [string, string];
      mapping.set(singular, toSingular);
      mapping.set(plural, toPlural);
    }
  }
  return text
    .split(/(\{[^}]*\})/)
    .map((part) =>
      part.startsWith("{")
        ? part
        : part.replace(/[A-Za-z]+/g, (word) => {
            const to = mapping.get(word.toLowerCase());
            if (to === undefined) return word;
            return word[0] === word[0]?.toUpperCase() ? to.charAt(0).toUpperCase() + to.slice(1) : to;
          }),
    )
    .join("");
}

const LEAD_INS = [
  "",
  "",
  "",
  "",
  "Question: ",
  "Problem: ",
  "Please solve this. ",
  "Try this one: ",
  "Here is a puzzle. ",
  "A word problem: ",
  "Homework: ",
  "Quick question. ",
  "Think about this. ",
  "Exercise: ",
];
const CLOSINGS = [
  "",
  "",
  "",
  "",
  " Give the answer only.",
  " Show the result.",
  " Answer with a number.",
  " Explain briefly.",
  " Be careful.",
  " Thanks!",
  " Give the exact value.",
];
/** Sentences that change nothing (no numbers), put somewhere in a problem now and then. */
const FILLERS = [
  "It is a sunny day.",
  "{@person} likes puzzles.",
  "Nobody else is involved.",
  "This happens on a Saturday.",
  "Everything is the same size.",
  "Nothing is lost or broken.",
  "{@person} writes it down in a notebook.",
  "The teacher asks the class about it.",
  "Assume nothing else changes.",
  "It is part of a school project.",
  "Think carefully.",
  "{@person} wants to check the answer.",
];

/** Splits a phrasing after each sentence end (the punctuation stays with its sentence). */
function sentences(text: string): string[] {
  return text.match(/[^.?!]+(?:[.?!]+|$)\s*/g)?.map((s) => s.trim()) ?? [text];
}

/** The setup of phrasing `a` with the last sentence of phrasing `b`, or null if their slots do not fit. */
function recombine(family: Family, a: string, b: string): string | null {
  const left = sentences(a).slice(0, -1);
  const right = sentences(b).at(-1);
  if (left.length === 0 || right === undefined) return null;
  const text = `${left.join(" ")} ${right}`;
  const named = phrasingOrder(text);
  const fits =
    family.params.every((p) => named.filter((n) => n === p).length === 1) &&
    named.length === family.params.length;
  return fits && text !== a ? text : null;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** Outside the slots, replaces one phrase of each group (whole words) by another now and then. */
function swapWords(text: string, rng: Rng): string {
  return text
    .split(/(\{[^}]*\})/)
    .map((part) => {
      if (part.startsWith("{")) return part;
      let out = part;
      for (const group of SWAPS) {
        if (rng.next() < 0.4) continue;
        for (const phrase of group) {
          const re = new RegExp(`(?<![A-Za-z])${escapeRegExp(phrase)}(?![A-Za-z])`, "g");
          if (!re.test(out)) continue;
          const other = rng.pick(group.filter((p) => p !== phrase));
          out = out.replace(re, other);
          break;
        }
      }
      return out;
    })
    .join("");
}

function names(text: string): string[] {
  return phrasingOrder(text);
}

/**
 * Sentences from several training phrasings put together: a question from one, then setup
 * sentences from any, each naming parameters not yet named, until every parameter is named once.
 */
function mixSentences(family: Family, indices: readonly number[], rng: Rng): string | null {
  const split = indices.map((i) => sentences(family.phrasings[i] as string));
  const questions = split.map((s) => s.at(-1) as string);
  const setups = split.flatMap((s) => s.slice(0, -1));
  for (let attempt = 0; attempt < 8; attempt++) {
    const q = rng.pick(questions);
    const named = new Set(names(q));
    if (names(q).length !== named.size) continue;
    const chosen: string[] = [];
    const pool = [...setups];
    for (let i = pool.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [pool[i], pool[j]] = [pool[j] as string, pool[i] as string];
    }
    for (const s of pool) {
      const n = names(s);
      if (n.length === 0 || n.some((p) => named.has(p)) || new Set(n).size !== n.length) continue;
      for (const p of n) named.add(p);
      chosen.push(s);
    }
    if (family.params.every((p) => named.has(p)) && named.size === family.params.length && chosen.length)
      return `${chosen.join(" ")} ${q}`;
  }
  return null;
}

/** Whether every parameter is named exactly once. */
function fits(family: Family, text: string): boolean {
  const n = names(text);
  return (
    n.length === family.params.length && family.params.every((p) => n.filter((x) => x === p).length === 1)
  );
}

/** A lead-in and a closing now and then (no numbers), around a phrasing. */
export function decorate(text: string, rng: Rng): string {
  const lead = rng.pick(LEAD_INS);
  return `${lead}${lead ? text.charAt(0).toUpperCase() + text.slice(1) : text}${rng.pick(CLOSINGS)}`;
}

/** A variation of one of `family`'s training phrasings (`indices`), as a phrasing with slots. */
export function variedPhrasing(family: Family, indices: readonly number[], rng: Rng): string {
  const base = family.phrasings[rng.pick(indices)] as string;
  let text = base;
  const mode = rng.next();
  if (mode < 0.25) text = recombine(family, base, family.phrasings[rng.pick(indices)] as string) ?? base;
  else if (mode < 0.55) text = mixSentences(family, indices, rng) ?? base;
  let parts = sentences(text);
  // The setup sentences in another order now and then (the numbers' order follows the text).
  if (parts.length > 2 && rng.next() < 0.3) {
    const setup = parts.slice(0, -1);
    for (let i = setup.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [setup[i], setup[j]] = [setup[j] as string, setup[i] as string];
    }
    parts = [...setup, parts.at(-1) as string];
  }
  // The question first now and then.
  if (parts.length > 1 && rng.next() < 0.2) parts = [parts.at(-1) as string, ...parts.slice(0, -1)];
  if (rng.next() < 0.3) parts.splice(rng.int(0, parts.length), 0, rng.pick(FILLERS));
  text = parts.map((p) => (p.startsWith("{") ? p : p.charAt(0).toUpperCase() + p.slice(1))).join(" ");
  if (!fits(family, text)) text = base;
  if (rng.next() < 0.6) text = swapWords(text, rng);
  if (rng.next() < 0.6) text = swapNouns(text, rng);
  return decorate(text, rng);
}
