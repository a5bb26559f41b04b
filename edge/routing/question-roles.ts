/**
 * What a question asks for, precisely enough to tell a near miss from a re-wording (issue 16): two
 * problems with the same numbers that ask for another quantity (the amount saved vs the original
 * price, the younger vs the older sibling, the dimes vs the nickels, the numbers not divisible vs
 * divisible) must not share a route. Each rule compares the question sentences of the two problems
 * (problem-structure.ts finds them) and answers whether they ask for different things; a re-wording
 * may say the same thing with other words, so a rule only fires on evidence of a different role
 * (a negation, another member of a group of alternatives, a swap of what is asked and what is
 * given), never on a word merely missing.
 */
import { NUMBER_WORDS } from "./number-words.js";
import { canonicalConcept, UNIT_CONCEPTS } from "./thesaurus.js";

/** The parts of a problem's question sentence these rules compare. */
export interface QuestionRoles {
  /** The question sentence's concepts. */
  question: Set<string>;
  /** Whether the question is negated (`not divisible`, `isn't yellow`, `other than`). */
  negated: boolean;
  /**
   * Each number of the text (as written) -> the concepts right after it, one per place the number
   * stands (`2 women` -> `women`; `8 workers ... 8 hours` -> `worker`, `hour`).
   */
  counts: Map<string, Set<string>>;
  /** Whether the question counts back in time (`how many years ago`). */
  backInTime: boolean;
  /**
   * Pairs of concepts the text relates as two of a kind (`nickels and dimes`, `Tom is 8 years
   * older than his sister`), as `x|y` both ways: what a swap of asked and given can exchange.
   */
  related: Set<string>;
  /**
   * What a measured question asks for, as `unit|thing` (`how many liters of water` ->
   * `liter|water`), or null.
   */
  measured: string | null;
  /** What a `how many` question counts (`how many weeks` -> `week`), or null. */
  countOf: string | null;
  /** What the text counts with a number in words (`sixteen metres` -> `meter`). */
  countedInWords: Set<string>;
}

/** The problem's concepts, and its question's roles. */
interface Compared extends QuestionRoles {
  concepts: Set<string>;
}

/**
 * Alternatives a question picks one of, by direction or by role: the inside or the outside angle,
 * the speed in still water or the current's, the original price or the amount saved. Present in
 * both questions, they must be the same member. (A relation's direction in the data, `older` vs
 * `younger`, is an exclusive group of the whole text: thesaurus.ts `EXCLUSIVE`.)
 */
export const QUESTION_ALTERNATIVES: string[][] = [
  ["interior", "exterior"],
  ["current", "stillwater"],
  ["upstream", "downstream"],
  ["increase", "decrease"],
  ["profit", "loss"],
  ["original", "final", "save"],
  ["square", "cube"],
  ["radius", "diameter"],
  ["simple", "compound"],
  ["deposit", "withdraw"],
  ["head", "tail"],
].map((group) => group.map(canonicalConcept));

/**
 * Negation, counted in the question sentence (the thesaurus spells `isn't`, `cannot` with `not`):
 * an odd count asks for the complement (`not divisible`, `isn't yellow`, `other than yellow`); two
 * cancel. `no` and `nobody` are left out:
 * they state conditions (`no member holds more than 1 office`) that re-wordings move out of the
 * question or say as `at most`; so is `none` but in `none of` (`any number of toppings, including
 * none` allows a count of zero).
 */
const NEGATION = /\b(?:not|never|neither|nor|except|non)\b|\bnone(?= of\b)|\bother than\b/g;

/**
 * The roles of a problem: `text` the whole (lower-cased, thesaurus phrases applied), `question` its
 * question sentence with concepts `concepts` (`conceptOf` maps a word to its concept, null for a
 * function word).
 */
export function questionRoles(
  text: string,
  question: string,
  concepts: Set<string>,
  conceptOf: (word: string) => string | null,
): QuestionRoles {
  const counts = new Map<string, Set<string>>();
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)\s+([a-z]+)/g)) {
    const concept = CURRENCIES.has(m[2] as string)
      ? canonicalConcept(m[2] as string)
      : conceptOf(m[2] as string);
    if (concept === null) continue;
    const counted = counts.get(m[1] as string);
    if (counted) counted.add(concept);
    else counts.set(m[1] as string, new Set([concept]));
  }
  const negations = question.match(NEGATION)?.length ?? 0;
  return {
    question: concepts,
    negated: negations % 2 === 1,
    counts,
    backInTime: /\bago\b/.test(question),
    related: relatedPairs(text, conceptOf),
    measured: measuredThing(question, conceptOf),
    countOf: countedThing(question, conceptOf),
    countedInWords: new Set(
      [...text.matchAll(COUNTED_IN_WORDS)].flatMap((m) => conceptOf(m[1] as string) ?? []),
    ),
  };
}

/**
 * Currencies count money (`540 dollars` vs `540 euros` converts the other way), though the
 * router's concepts leave `dollars` out (a price is a price in any currency).
 */
const CURRENCIES = new Set(
  "dollar dollars euro euros pound pounds yen rupee rupees peso pesos franc francs yuan cent cents".split(
    " ",
  ),
);

/** `how many liters of water` -> `liter|water`; null for a question of another form. */
function measuredThing(question: string, conceptOf: (word: string) => string | null): string | null {
  const m = question.match(/\bhow (?:many|much) ([a-z]+) of ([a-z]+)/);
  if (!m) return null;
  const [unit, thing] = [conceptOf(m[1] as string), conceptOf(m[2] as string)];
  return unit && thing ? `${unit}|${thing}` : null;
}

/** The first concept among the three words after `how many`, or null. */
function countedThing(question: string, conceptOf: (word: string) => string | null): string | null {
  const m = question.match(/\bhow many ((?:[a-z]+ ?){1,3})/);
  for (const word of m?.[1]?.split(" ") ?? []) {
    const concept = word ? conceptOf(word) : null;
    if (concept !== null) return concept;
  }
  return null;
}

/** A number in words and the word after it (`sixteen metres`). */
const COUNTED_IN_WORDS = new RegExp(`\\b(?:${Object.keys(NUMBER_WORDS).join("|")})\\s+([a-z]+)`, "g");

/** Words that relate two things of a kind: `x and y`, `x or y`, `x is older than y`. */
const RELATING = new Set(["and", "or", "nor", "than", "versus", "vs"]);
/**
 * How many words may stand between a thing and the relating word (`tom is 8 years older than`),
 * and between the relating word and the other thing (`and her daughter`).
 */
const RELATED_BEFORE = 4;
const RELATED_AFTER = 2;

/** The pairs of concepts within `RELATED_WITHIN` words of each other with a relating word between. */
function relatedPairs(text: string, conceptOf: (word: string) => string | null): Set<string> {
  const words = text.match(/[a-z]+/g) ?? [];
  const concepts = words.map(conceptOf);
  const pairs = new Set<string>();
  words.forEach((word, i) => {
    if (!RELATING.has(word)) return;
    for (let x = Math.max(0, i - RELATED_BEFORE - 1); x < i; x++)
      for (let y = i + 1; y < Math.min(words.length, i + RELATED_AFTER + 2); y++) {
        const [cx, cy] = [concepts[x], concepts[y]];
        if (cx && cy && cx !== cy) pairs.add(`${cx}|${cy}`).add(`${cy}|${cx}`);
      }
  });
  return pairs;
}

/**
 * Whether two problems' questions ask for different things (both have the same numbers):
 * - one is negated and the other not (`not divisible by 7`), or one counts back in time and the
 *   other not (`how many years ago` vs `in how many years`);
 * - they pick different members of a `QUESTION_ALTERNATIVES` group (`speed of the current` vs
 *   `speed in still water`);
 * - they swap roles: each asks about something the other states only as data (`how many nickels`
 *   vs `how many dimes` about the same jar; `how old is his sister` vs `how old is Tom`);
 * - one number counts different things, each of which the other problem counts too (`4 days` vs
 *   `4 workers`, with `6 workers` and `10 days` in both);
 * - they state the same data and one question names something the other problem never names.
 * An asked-for quantity the other problem does not name at all (`the midpoint` vs `the distance`)
 * is the `ASKED` check of problem-structure.ts `differences`.
 */
export function questionsDiffer(a: Compared, b: Compared): boolean {
  if (a.negated !== b.negated || a.backInTime !== b.backInTime) return true;
  for (const group of QUESTION_ALTERNATIVES) {
    const x = group.filter((m) => a.question.has(m));
    const y = group.filter((m) => b.question.has(m));
    if (x.length > 0 && y.length > 0 && !x.some((m) => y.includes(m))) return true;
  }
  if (swapped(a, b)) return true;
  if (otherThingMeasured(a, b) || otherThingMeasured(b, a)) return true;
  if (countAskedIsGiven(a, b) || countAskedIsGiven(b, a)) return true;
  if (sameDataOtherQuestion(a, b)) return true;
  return countsSwapped(a, b);
}

/**
 * Whether the two questions measure different things in one unit, and `a`'s thing is one `b`
 * names elsewhere (`how many liters of salt must be added` to a salt solution, for `how many
 * liters of water`); a thing the other never names is a word of its own (`pure` in `liters of pure
 * water`).
 */
function otherThingMeasured(a: Compared, b: Compared): boolean {
  if (a.measured === null || b.measured === null || a.measured === b.measured) return false;
  const [unitA, thingA] = a.measured.split("|") as [string, string];
  const [unitB, thingB] = b.measured.split("|") as [string, string];
  return unitA === unitB && b.concepts.has(thingA) && !a.question.has(thingB);
}

/**
 * Whether `a` asks how many of something it never counts with a number, and `b` states that count
 * without asking it (`after how many weeks will he have $201` vs `how much will he have after 201
 * weeks`): the count is the answer in one and data in the other.
 */
function countAskedIsGiven(a: Compared, b: Compared): boolean {
  const x = a.countOf;
  return (
    x !== null &&
    b.countOf !== x &&
    !countsSomething(a, x) &&
    !a.countedInWords.has(x) &&
    countsSomething(b, x)
  );
}

/**
 * Whether the questions swap asked and given: `a` asks about some `x` that `b` states only as data,
 * `b` about some `y` that `a` states only as data, and one text relates `x` and `y` as two of a
 * kind (`nickels and dimes`, `older than his sister`). A re-wording also moves words between the
 * question and the data (`how many draws are black` for `both balls`), but not between two things
 * the problem sets side by side.
 */
function swapped(a: Compared, b: Compared): boolean {
  const xs = asksAboutData(a, b);
  const ys = asksAboutData(b, a);
  for (const x of xs)
    for (const y of ys) if (a.related.has(`${x}|${y}`) || b.related.has(`${x}|${y}`)) return true;
  return false;
}

/** What `a`'s question asks about that `b` states but does not ask about (a unit asks in it). */
function asksAboutData(a: Compared, b: Compared): string[] {
  return [...a.question].filter((c) => b.concepts.has(c) && !b.question.has(c) && !UNIT_CONCEPTS.has(c));
}

/**
 * Whether one number counts different things in the two problems, each of which the other problem
 * counts too (`exactly 2 women` vs `exactly 2 men`, both from 6 men and 5 women); a number that
 * stands in several places counts something the same in both when any of its things are shared
 * (`8 workers ... 8 hours` vs `10 workers ... 8 hours`). Symmetric.
 */
function countsSwapped(a: Compared, b: Compared): boolean {
  for (const [n, xs] of a.counts) {
    const ys = b.counts.get(n);
    if (ys === undefined || [...xs].some((x) => ys.has(x))) continue;
    if ([...xs].some((x) => countsSomething(b, x)) && [...ys].some((y) => countsSomething(a, y))) return true;
  }
  return false;
}

/** Whether some number of `p` counts `thing`. */
function countsSomething(p: Compared, thing: string): boolean {
  for (const counted of p.counts.values()) if (counted.has(thing)) return true;
  return false;
}

/**
 * How alike (Dice overlap of the concepts outside the question sentences) two problems' data must
 * be for a question naming something the other never names to make them different problems.
 * Measured on the tuning, development and dev-2 sets: at 0.8 no re-wording is lost (0.7 loses one).
 */
const DATA_ALIKE = 0.8;

/**
 * Whether the two problems state the same data but ask something else: a near miss made by keeping
 * the problem and replacing its question (`how many gaps are there between posts` for `how many
 * posts are there`; `how much was the discount` for `what was the original price`). A re-wording
 * that keeps the data keeps the question's concepts too; when it does not, abstaining is the
 * safe side.
 */
function sameDataOtherQuestion(a: Compared, b: Compared): boolean {
  const dataA = [...a.concepts].filter((c) => !a.question.has(c));
  const dataB = new Set([...b.concepts].filter((c) => !b.question.has(c)));
  if (dataA.length === 0 || dataB.size === 0) return false;
  const shared = dataA.filter((c) => dataB.has(c)).length;
  if ((2 * shared) / (dataA.length + dataB.size) < DATA_ALIKE) return false;
  return names(a.question, b.concepts) || names(b.question, a.concepts);
}

/** Whether some concept of `question` is not among `concepts`. */
function names(question: Set<string>, concepts: Set<string>): boolean {
  for (const c of question) if (!concepts.has(c)) return true;
  return false;
}
