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
import { canonicalConcept } from "./thesaurus.js";

/** The parts of a problem's question sentence these rules compare. */
export interface QuestionRoles {
  /** The question sentence's concepts. */
  question: Set<string>;
  /** The asked-for head: the first content concept after the wh-phrase (`dime` in `how many dimes`), or null. */
  target: string | null;
  /** Whether the question is negated (`not divisible`, `isn't yellow`, `other than`). */
  negated: boolean;
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
].map((group) => group.map(canonicalConcept));

/**
 * Negation, counted in the question sentence: an odd count asks for the complement (`not
 * divisible`, `is not yellow`, `other than yellow`). Double negation (`not ... no`) cancels.
 */
const NEGATION = /\b(?:not|never|none|neither|nor|cannot|except|non)\b|n't\b|\bother than\b/g;

/**
 * Head nouns that name no quantity of their own (`how many ways`, `what is the number of`): the
 * asked-for head is the next content concept.
 */
const GENERIC_HEADS = new Set(
  "way amount sum total kind type sort many much long far big large old often dollar cent"
    .split(" ")
    .map(canonicalConcept),
);

/** The wh-phrase that opens a question, up to where its head begins. */
const WH_PHRASE =
  /^\s*(?:[a-z]+\s+){0,3}?(?:how (?:many|much|old|far|long|high|fast|big)|what|which|find|compute|calculate|determine|give)\b\s*(?:(?:is|are|was|were|will|would|be|the|a|an|of|its|their|his|her|each|one|in)\s+)*/;

/** The roles of a question sentence whose concepts are `concepts` (`conceptOf` maps a word to its concept). */
export function questionRoles(
  question: string,
  concepts: Set<string>,
  conceptOf: (word: string) => string | null,
): QuestionRoles {
  const negations = question.match(NEGATION)?.length ?? 0;
  const wh = WH_PHRASE.exec(question);
  let target: string | null = null;
  if (wh) {
    for (const word of question.slice(wh[0].length).match(/[a-z]+/g) ?? []) {
      const concept = conceptOf(word);
      if (concept === null || GENERIC_HEADS.has(concept)) continue;
      target = concept;
      break;
    }
  }
  return { question: concepts, target, negated: negations % 2 === 1 };
}

/**
 * Whether two problems' questions ask for different things (both have the same numbers):
 * - one is negated and the other not (`not divisible by 7`);
 * - they pick different members of a `QUESTION_ALTERNATIVES` group (`older` vs `younger`);
 * - they swap roles: each asks about something the other states only as data (`how many nickels`
 *   vs `how many dimes` about the same jar; `how old is his sister` vs `how old is Tom`).
 * An asked-for quantity the other problem does not name at all (`the midpoint` vs `the distance`)
 * is the `ASKED` check of problem-structure.ts `differences`.
 */
export function questionsDiffer(a: Compared, b: Compared): boolean {
  if (a.negated !== b.negated) return true;
  for (const group of QUESTION_ALTERNATIVES) {
    const x = group.filter((m) => a.question.has(m));
    const y = group.filter((m) => b.question.has(m));
    if (x.length > 0 && y.length > 0 && x.join() !== y.join()) return true;
  }
  return asksAboutData(a, b) && asksAboutData(b, a);
}

/** Whether `a`'s asked-for head is something `b` states but does not ask about. */
function asksAboutData(a: Compared, b: Compared): boolean {
  return a.target !== null && b.concepts.has(a.target) && !b.question.has(a.target);
}
