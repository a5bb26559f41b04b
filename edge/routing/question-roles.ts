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
import { canonicalConcept, UNIT_CONCEPTS } from "./thesaurus.js";

/** The parts of a problem's question sentence these rules compare. */
export interface QuestionRoles {
  /** The question sentence's concepts. */
  question: Set<string>;
  /** Whether the question is negated (`not divisible`, `isn't yellow`, `other than`). */
  negated: boolean;
  /** Each number of the text (as written) -> the concept right after it (`2 women` -> `women`). */
  counts: Map<string, string>;
  /** Whether the question counts back in time (`how many years ago`). */
  backInTime: boolean;
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
 * question or say as `at most`.
 */
const NEGATION = /\b(?:not|never|none|neither|nor|except|non)\b|\bother than\b/g;

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
  const counts = new Map<string, string>();
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)\s+([a-z]+)/g)) {
    const concept = conceptOf(m[2] as string);
    if (concept !== null && !counts.has(m[1] as string)) counts.set(m[1] as string, concept);
  }
  const negations = question.match(NEGATION)?.length ?? 0;
  return { question: concepts, negated: negations % 2 === 1, counts, backInTime: /\bago\b/.test(question) };
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
    if (x.length > 0 && y.length > 0 && x.join() !== y.join()) return true;
  }
  if (asksAboutData(a, b) && asksAboutData(b, a)) return true;
  if (sameDataOtherQuestion(a, b)) return true;
  return countsSwapped(a, b);
}

/** Whether `a`'s question asks about something `b` states but does not ask about (a unit asks in it). */
function asksAboutData(a: Compared, b: Compared): boolean {
  for (const c of a.question)
    if (b.concepts.has(c) && !b.question.has(c) && !UNIT_CONCEPTS.has(c)) return true;
  return false;
}

/**
 * Whether one number counts different things in the two problems, each of which the other problem
 * counts too (`exactly 2 women` vs `exactly 2 men`, both from 6 men and 5 women). Symmetric.
 */
function countsSwapped(a: Compared, b: Compared): boolean {
  for (const [n, x] of a.counts) {
    const y = b.counts.get(n);
    if (y !== undefined && y !== x && countsSomething(b, x) && countsSomething(a, y)) return true;
  }
  return false;
}

/** Whether some number of `p` counts `thing`. */
function countsSomething(p: Compared, thing: string): boolean {
  for (const counted of p.counts.values()) if (counted === thing) return true;
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
