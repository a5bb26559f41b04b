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
  ["What is", "Find", "Work out", "Calculate", "Determine", "Compute"],
  ["How many", "What number of"],
  ["buys", "purchases", "gets", "picks up"],
  ["costs", "is priced at", "sells for"],
  ["altogether", "in total", "in all"],
  ["rounded to two decimal places", "to two decimal places", "correct to two decimal places"],
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

const LEAD_INS = ["", "", "", "Question: ", "Problem: ", "Please solve this. ", "Try this one: "];
const CLOSINGS = ["", "", "", " Give the answer only.", " Show the result.", " Answer with a number."];

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

function swapWords(text: string, rng: Rng): string {
  let out = text;
  for (const group of SWAPS) {
    for (const phrase of group) {
      if (!out.includes(phrase) || rng.next() < 0.5) continue;
      const other = rng.pick(group.filter((p) => p !== phrase));
      out = out.replace(phrase, other);
      break;
    }
  }
  return out;
}

/** A variation of one of `family`'s training phrasings (`indices`), as a phrasing with slots. */
export function variedPhrasing(family: Family, indices: readonly number[], rng: Rng): string {
  const base = family.phrasings[rng.pick(indices)] as string;
  let text = base;
  if (rng.next() < 0.4) text = recombine(family, base, family.phrasings[rng.pick(indices)] as string) ?? base;
  if (rng.next() < 0.5) text = swapWords(text, rng);
  if (rng.next() < 0.6) text = swapNouns(text, rng);
  const lead = rng.pick(LEAD_INS);
  return `${lead}${lead ? text.charAt(0).toUpperCase() + text.slice(1) : text}${rng.pick(CLOSINGS)}`;
}
