/**
 * A problem's structure, as the router's `similar` step compares it (edge/routing/router.ts): its
 * concepts over the math thesaurus (thesaurus.ts), what its question sentence asks for, its
 * numbers (digits and number words), its formulas; and the comparisons of two structures.
 */
import { canonicalNumbers } from "../../shared/normalize.js";
import { type QuestionRoles, questionRoles, questionsDiffer } from "./question-roles.js";
import {
  ASKED,
  canonicalConcept,
  EXCLUSIVE,
  FORMAT_CLAUSES,
  MULTIPLES,
  NUMBER_WORDS,
  ORDINALS,
  PHRASES,
  SEARCH_EXPANSIONS,
  STOP_WORDS,
  UNIT_LETTERS,
} from "./thesaurus.js";

/** Why two problems with the same numbers still ask different questions. */
export type StructureDifference = "question_differs" | "structure_differs";

/** A problem's structure, as `routeProblem` compares it. */
export interface ProblemStructure extends QuestionRoles {
  /** Concepts (canonical, stemmed content words) of the whole text. */
  concepts: Set<string>;
  /** The question sentence's concepts that name what is asked for (`ASKED`). */
  asked: Set<string>;
  /** Single-letter variables of the question sentence. */
  askedVariables: Set<string>;
  numbers: Numbers;
  /** The formulas (`x^2-5x+6=0`, `7^100`), sorted. */
  formulas: string[];
}

/** The numbers a problem states: as digits, and as number words (`five`, `tenth`, `twice`). */
export interface Numbers {
  digits: string[];
  words: string[];
}

/** Analyzes a normalized problem text (see the module comment). */
export function analyzeProblem(normalizedText: string): ProblemStructure {
  // Normalized text keeps case and each number's written form (they tell problems apart); concepts
  // are case-blind and numbers compare by value.
  let text = ` ${canonicalNumbers(normalizedText).toLowerCase()} `;
  for (const [pattern, replacement] of FORMAT_CLAUSES) text = text.replace(pattern, replacement);
  // One space between words after each rewrite, so the next pattern sees `square meter`.
  for (const [pattern, replacement] of PHRASES)
    text = text.replace(pattern, replacement).replace(/ {2,}/g, " ");
  // Sentence punctuation around a formula is not part of it.
  const formulas = (text.match(/\S+/g) ?? [])
    .map((chunk) => chunk.replace(/^[([]+|[.,;:?)\]]+$/g, ""))
    .filter(isFormula)
    .sort();
  // The question sentence: the last one that asks (a wh-word near its start, or an imperative),
  // else the last sentence (questions come last in most problems; normalization drops the `?`).
  const sentences = text.split(/(?<=[.?;])\s+/).filter((s) => /[a-z]/.test(s));
  const question = [...sentences].reverse().find((s) => QUESTION_START.test(s)) ?? sentences.at(-1) ?? text;
  const questionConcepts = conceptsOf(question);
  return {
    concepts: conceptsOf(text),
    ...questionRoles(text, question, questionConcepts, conceptOfWord),
    asked: new Set([...questionConcepts].filter((c) => ASKED.has(c))),
    askedVariables: new Set(
      (question.match(/(?<![a-z])[b-hj-z](?![a-z(])/g) ?? []).filter((v) => !UNIT_LETTERS.has(v)),
    ),
    numbers: numbersOf(text),
    formulas,
  };
}

/** A sentence that asks: a wh-word among its first words, or an imperative. */
const QUESTION_START =
  /\?\s*$|^\s*(?:[a-z]+\s+){0,2}(?:what|which|how|when)\b|^\s*(?:find|compute|calculate|determine|solve|give|convert|count|evaluate|sum|add|work out|figure out)\b/;

function conceptsOf(text: string): Set<string> {
  const concepts = new Set<string>();
  // An ordinal's suffix (`15th`) is no word.
  for (const word of text.match(/(?<!\d)[a-z]+/g) ?? []) {
    const concept = conceptOfWord(word);
    if (concept !== null) concepts.add(concept);
  }
  return concepts;
}

/** A word's concept, or null for a function word, a number word or a single letter. */
function conceptOfWord(word: string): string | null {
  if (word.length === 1 || STOP_WORDS.has(word) || word in NUMBER_WORDS || word in ORDINALS) return null;
  const concept = canonicalConcept(word);
  return STOP_WORDS.has(concept) ? null : concept;
}

/**
 * Why two problems with the same numbers still ask different questions, or null. `roles: false`
 * leaves out the question roles (question-roles.ts), for two library problems known to have the
 * same verified answer: whatever each asks, the answer is the same.
 */
export function differences(
  a: ProblemStructure,
  b: ProblemStructure,
  roles = true,
): StructureDifference | null {
  for (const c of a.asked) if (!b.concepts.has(c)) return "question_differs";
  for (const c of b.asked) if (!a.concepts.has(c)) return "question_differs";
  if (a.askedVariables.size > 0 && b.askedVariables.size > 0 && !sameSet(a.askedVariables, b.askedVariables))
    return "question_differs";
  if (roles && questionsDiffer(a, b)) return "question_differs";
  for (const group of EXCLUSIVE) {
    const x = [...group.members].filter((m) => a.concepts.has(m));
    const y = [...group.members].filter((m) => b.concepts.has(m));
    if ((group.strict || (x.length > 0 && y.length > 0)) && x.join() !== y.join()) return "structure_differs";
  }
  if (a.formulas.length > 0 && b.formulas.length > 0 && a.formulas.join(" ") !== b.formulas.join(" "))
    return "structure_differs";
  return null;
}

/**
 * Whether two problems state the same numbers: every digit number of each is among the other's
 * numbers (digits or words), and only one side has number words the other lacks (`the other four`
 * adds a count; `three dice` for `two dice` changes the problem).
 */
export function sameNumbers(a: Numbers, b: Numbers): boolean {
  const all = (n: Numbers) => [...n.digits, ...n.words];
  const aExtra = without(all(a), all(b));
  const bExtra = without(all(b), all(a));
  return (
    without(a.digits, all(b)).length === 0 &&
    without(b.digits, all(a)).length === 0 &&
    (aExtra.length === 0 || bExtra.length === 0)
  );
}

/** The multiset difference xs - ys. */
function without(xs: string[], ys: string[]): string[] {
  const left = new Map<string, number>();
  for (const y of ys) left.set(y, (left.get(y) ?? 0) + 1);
  return xs.filter((x) => {
    const n = left.get(x) ?? 0;
    if (n === 0) return true;
    left.set(x, n - 1);
    return false;
  });
}

function numbersOf(text: string): Numbers {
  // The text is normalized: numbers are canonical digit runs (`0.5`, `12500`), signs aside.
  const digits = text.match(/\d+(?:\.\d+)?/g) ?? [];
  const words: string[] = [];
  // Number words, compounds included: `three hundred and sixty`, `twenty-five`, `a dozen`.
  let value: number | null = null;
  let chunk = 0;
  const flush = () => {
    if (value !== null) words.push(String(value + chunk));
    value = null;
    chunk = 0;
  };
  for (const word of text.match(/[a-z]+/g) ?? []) {
    const n = NUMBER_WORDS[word];
    if (n !== undefined) {
      if (value === null) value = 0;
      if (n === 100) chunk = (chunk || 1) * 100;
      else if (n === 1000) {
        value += (chunk || 1) * 1000;
        chunk = 0;
      } else chunk += n;
    } else if (word === "and" && value !== null) {
      // `three hundred and sixty` goes on.
    } else {
      flush();
      const m = ORDINALS[word] ?? MULTIPLES[word];
      if (m !== undefined) words.push(String(m));
    }
  }
  flush();
  return { digits, words };
}

/** Whether a whitespace-separated chunk is a formula: an equation, a power, or arithmetic on symbols. */
function isFormula(chunk: string): boolean {
  if (/[a-z]{3,}/.test(chunk)) return false;
  return /[=^<>]/.test(chunk) || /[\w)]\s*[-+*/]\s*[\w(]/.test(chunk);
}

/**
 * The FTS query: the query's concepts plus the words each concept stands for, so the index finds
 * library problems that say it another way; with `everyWord`, the query's own words too.
 */
export function searchText(normalizedText: string, query: ProblemStructure, everyWord: boolean): string {
  // Each word costs a BM25 score for every template holding it: the concepts (which FTS stems
  // like the index) suffice unless function words are wanted too.
  const words: string[] = everyWord ? (normalizedText.toLowerCase().match(/[a-z]{2,}/g) ?? []) : [];
  words.push(...query.concepts);
  for (const c of query.concepts) {
    const spelled = SEARCH_EXPANSIONS[c];
    if (spelled) words.push(spelled);
  }
  return words.join(" ");
}

export function dice(a: Set<string>, b: Set<string>): number {
  if (a.size + b.size === 0) return 0;
  let shared = 0;
  for (const w of a) if (b.has(w)) shared++;
  return (2 * shared) / (a.size + b.size);
}

function sameSet(a: Set<string>, b: Set<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}
