/**
 * The router: the one decision, for `/v1/solve`, `kvgraft eval router` and `kvgraft bench router`,
 * of which library problem (and which of its blocks) a normalized query goes to, or to abstain.
 * In this order:
 * 1. `answer`: the exact problem (same fingerprint) has a verified solution.
 * 2. `template`: problems with the same template (same words, other numbers); the block is the
 *    newest ready block of the newest such problem that has one (else the newest problem, no block).
 *    The decision carries every problem of the template, for the transfer of a parametric program.
 * 3. `similar`: a re-worded library problem stated with the same numbers, else `abstain`.
 *
 * Step 3 compares the structure of the two problems, not their surface words (`analyzeProblem`):
 * - the numbers: the query states exactly the candidate's numbers (digits and number words such as
 *   `fourteen`, `twenty-five`, `tenth`, `twice`; answer-format clauses such as `rounded to two
 *   decimal places` are not data), so the grafted worked solution is about this very instance;
 * - the asked-for quantity: what the question sentence asks for (sum, area, larger, gcd, ...) must
 *   be named by the other problem too, and an asked variable (`the value of y`) must be the same;
 * - relations and concepts that change the problem when swapped: units of one dimension (`years`
 *   vs `months`), `at least` vs `is`, `with` vs `without replacement`, arranging vs choosing,
 *   moving toward each other vs in the same direction, and the formulas (`x^2-5x+6=0` vs
 *   `x^2+5x+6=0`);
 * - the wording: the Dice overlap of concepts, after a math thesaurus maps the common ways to say
 *   one thing to one word (`greatest common divisor` = `highest common factor` = `gcd`, `km/h` =
 *   `kilometers per hour`, `arranged` = `lined up`, `chosen` = `selected`) and a light stemmer,
 *   must reach `threshold` and beat the runner-up among candidates with the same numbers by
 *   `margin`.
 * Anything else abstains: a wrong route costs more than an abstention (the model then answers
 * alone). The data access is the narrow `RouterLibrary`, so the decision is one plain function.
 */
import { and, desc, eq, sql } from "drizzle-orm";
import { answersEqual } from "../shared/answers.js";
import { sha256Hex } from "../shared/hash.js";
import { NORMALIZE_VERSION, problemTemplate } from "../shared/normalize.js";
import type { Database } from "./db/database.js";
import { blocks } from "./db/schema.js";
import {
  findByTemplate,
  findVerifiedByFingerprint,
  type TemplateMatch,
  toFtsQuery,
  type VerifiedAnswer,
} from "./library.service.js";

export type RouteKind = "answer" | "template" | "similar" | "abstain";
export type RouteReason =
  | "fingerprint"
  | "template"
  | "similar"
  | "no_candidates"
  | "below_threshold"
  | "ambiguous"
  | "question_differs"
  | "structure_differs"
  | "numbers_differ";

/** A routing decision; `score` is 1 for exact matches, the best candidate's Dice score otherwise. */
export interface RouteDecision {
  decision: RouteKind;
  problemId?: string;
  /** The block to graft: the newest ready block of the chosen problem, when it has one. */
  blockId?: string;
  score: number;
  runnerUp?: number;
  reason: RouteReason;
  /** `answer`: the verified solution that answers. */
  verified?: VerifiedAnswer;
  /** `template`: every problem of the template, oldest first (what a transfer chooses from). */
  matches?: TemplateMatch[];
}

/** A library problem as the lexical step reads it. */
export interface ProblemRow {
  id: string;
  template: string;
  normalizedText: string;
  /** The newest verified answer, or null. */
  answer: string | null;
}

/** What the router reads from the library (`libraryReader` serves it from the database). */
export interface RouterLibrary {
  /** The newest verified solution of the problem with this fingerprint, or null. */
  verifiedByFingerprint(fingerprint: string): Promise<VerifiedAnswer | null>;
  /** Every problem with exactly this template, oldest first, with its verified solution and ready blocks (oldest first). */
  byTemplate(template: string): Promise<TemplateMatch[]>;
  /**
   * One lexical search (BM25 over templates, by any of the words of `text`): the `lexical` best
   * templates, and up to `k` problems of the `wide` best templates, best template first, that may
   * state the query's `numbers`: every digit number of the query is one of the problem's (sign
   * aside), or, for a query with numbers in words only, every number of the problem is one of
   * those. A re-worded query states the numbers of its problem, so the other instances of a
   * template are no candidates however alike (`sameNumbers` then decides exactly).
   */
  search(text: string, numbers: Numbers, limits: SearchLimits): Promise<SearchResult>;
  /** The newest ready block of the problem, or null. */
  newestReadyBlock(problemId: string): Promise<string | null>;
}

/** How much `RouterLibrary.search` returns. */
export interface SearchLimits {
  lexical: number;
  wide: number;
  k: number;
}

/** What `RouterLibrary.search` found. */
export interface SearchResult {
  templates: string[];
  problems: ProblemRow[];
}

/** The router's view of a libSQL library database. */
export function libraryReader(db: Database): RouterLibrary {
  return {
    verifiedByFingerprint: (fingerprint) => findVerifiedByFingerprint(db, fingerprint),
    byTemplate: (template) => findByTemplate(db, template),
    search: async (text, numbers, limits) => {
      const match = toFtsQuery(text);
      if (match === null) return { templates: [], problems: [] };
      const value = sql`ltrim(CAST(n.value AS TEXT), '-')`;
      const digits = [...new Set(numbers.digits)];
      const words = [...new Set(numbers.words)];
      const stating =
        digits.length > 0
          ? sql.join(
              digits.map((d) => sql`EXISTS (SELECT 1 FROM json_each(p.params) AS n WHERE ${value} = ${d})`),
              sql` AND `,
            )
          : sql`NOT EXISTS (SELECT 1 FROM json_each(p.params) AS n WHERE ${value} NOT IN (${sql.join(
              words.map((w) => sql`${w}`),
              sql`, `,
            )}))`;
      // One FTS scan for both lists. MATERIALIZED keeps it its own step (bm25() is not allowed in
      // a flattened query); CROSS JOIN keeps the join order (the hits, then their problems by the
      // template index: left to the planner, SQLite scanned every problem); rows with a null id
      // are the lexical templates.
      const rows = await db.all<ProblemRow & { id: string | null }>(sql`
        WITH hits AS MATERIALIZED (
          SELECT template, bm25(problems_fts) AS rank FROM problems_fts WHERE problems_fts MATCH ${match}
          ORDER BY rank LIMIT ${limits.wide}
        )
        SELECT * FROM (
          SELECT NULL AS id, template, NULL AS normalizedText, NULL AS answer FROM hits
          ORDER BY rank LIMIT ${limits.lexical}
        )
        UNION ALL
        SELECT * FROM (
          SELECT p.id AS id, p.template AS template, p.normalized_text AS normalizedText,
            (SELECT s.answer FROM solutions s WHERE s.problem_id = p.id AND s.verified = 1
             ORDER BY s.id DESC LIMIT 1) AS answer
          FROM hits CROSS JOIN problems p ON p.template = hits.template AND p.normalize_version = ${NORMALIZE_VERSION}
          WHERE ${stating}
          ORDER BY hits.rank, p.id LIMIT ${limits.k}
        )`);
      return {
        templates: rows.filter((r) => r.id === null).map((r) => r.template),
        problems: rows.filter((r): r is ProblemRow => r.id !== null),
      };
    },
    newestReadyBlock: async (problemId) => {
      const [block] = await db
        .select({ sha256: blocks.sha256 })
        .from(blocks)
        .where(and(eq(blocks.problemId, problemId), eq(blocks.state, "ready")))
        .orderBy(desc(blocks.createdAt))
        .limit(1);
      return block?.sha256 ?? null;
    },
  };
}

/** The constants of the `similar` decision (see the module comment). */
export interface RouterTuning {
  /** The least Dice overlap of concepts. */
  threshold: number;
  /** By how much the best candidate must beat the runner-up with the same numbers. */
  margin: number;
}

/**
 * Calibrated with `npx tsx scripts/calibrate-router.ts` on the tuning set
 * (test/fixtures/router-library.jsonl and router-queries.jsonl): each constant is the middle of
 * the interval in which the whole tuning set comes out right with the other fixed (the script
 * prints the intervals). The numbers and structure checks do most of the abstaining, so the
 * interval for `threshold` is wide; a new library should be re-calibrated (docs/router.md).
 */
export const ROUTER_TUNING: RouterTuning = {
  threshold: 0.285,
  margin: 0.285,
};

/** How many BM25 templates tell a lexical near match with other numbers from no match at all. */
const LEXICAL_CANDIDATES = 10;
/** How many of the best BM25 templates are searched for problems with the query's numbers. */
const WIDE = 50;
/** How many problems with the query's numbers are compared. */
const CANDIDATES = 20;

/** Routes a normalized problem text (shared/normalize `normalizeProblem`); see the module comment. */
export async function routeProblem(
  library: RouterLibrary,
  normalizedText: string,
  tuning: Partial<RouterTuning> = {},
): Promise<RouteDecision> {
  const verified = await library.verifiedByFingerprint(await sha256Hex(normalizedText));
  if (verified) {
    const blockId = await library.newestReadyBlock(verified.problem.id);
    return {
      decision: "answer",
      problemId: verified.problem.id,
      ...(blockId ? { blockId } : {}),
      score: 1,
      reason: "fingerprint",
      verified,
    };
  }
  const matches = await library.byTemplate(problemTemplate(normalizedText).template);
  if (matches.length > 0) {
    // Graft what exists: the newest problem of the template that has a ready block.
    const withBlock = [...matches].reverse().find((m) => m.blocks.length > 0);
    const chosen = withBlock ?? (matches.at(-1) as TemplateMatch);
    const blockId = withBlock?.blocks.at(-1)?.sha256;
    return {
      decision: "template",
      problemId: chosen.problem.id,
      ...(blockId ? { blockId } : {}),
      score: 1,
      reason: "template",
      matches,
    };
  }
  const similar = decideSimilar(await similarCandidates(library, normalizedText), {
    ...ROUTER_TUNING,
    ...tuning,
  });
  if (similar.decision !== "similar" || !similar.problemId) return similar;
  const blockId = await library.newestReadyBlock(similar.problemId);
  return blockId ? { ...similar, blockId } : similar;
}

/** One library problem compared with the query. */
export interface SimilarCandidate {
  /** Null for a template seen only lexically (its problems state other numbers). */
  problemId: string | null;
  /** Dice overlap of concepts, in [0, 1]. */
  score: number;
  /** Whether the query states exactly this problem's numbers. */
  sameNumbers: boolean;
  /** Why the two ask different questions (`question_differs`, `structure_differs`), or null. */
  differs: "question_differs" | "structure_differs" | null;
  /** The library problem's structure (null for a template seen only lexically). */
  structure: ProblemStructure | null;
  /** Its verified answer, or null. */
  answer: string | null;
}

/**
 * The library problems the lexical search finds for the text, each compared with it: the best
 * BM25 templates (to tell a near match with other numbers from nothing alike), and the problems
 * stating the query's numbers among many more templates.
 */
export async function similarCandidates(
  library: RouterLibrary,
  normalizedText: string,
): Promise<SimilarCandidate[]> {
  const query = analyzeProblem(normalizedText);
  if (query.concepts.size === 0) return [];
  const limits = { lexical: LEXICAL_CANDIDATES, wide: WIDE, k: CANDIDATES };
  let found = await library.search(searchText(normalizedText, query, false), query.numbers, limits);
  // Some but few hits (a small library, or one whose problems are stated mostly in symbols, like
  // `what is #% of #`): search every word, function words too. No hit: no template shares a
  // concept, and function words alone would score every template for nothing.
  if (found.templates.length > 0 && found.templates.length < LEXICAL_CANDIDATES)
    found = await library.search(searchText(normalizedText, query, true), query.numbers, limits);
  const { templates, problems: rows } = found;
  const lexical = templates.map((template) => ({
    problemId: null,
    score: dice(query.concepts, analyzeLibraryText(template).concepts),
    sameNumbers: false,
    differs: null,
    structure: null,
    answer: null,
  }));
  return [
    ...lexical,
    ...rows.map((row) => {
      const other = analyzeLibraryText(row.normalizedText);
      return {
        problemId: row.id,
        score: dice(query.concepts, other.concepts),
        sameNumbers: sameNumbers(query.numbers, other.numbers),
        differs: differences(query, other),
        structure: other,
        answer: row.answer,
      };
    }),
  ];
}

/**
 * Library texts are analyzed once per isolate: the same problems come back query after query.
 * Bounded, so a long-lived process with a growing library does not grow without end.
 */
const analyzed = new Map<string, ProblemStructure>();
const ANALYZED_MAX = 50_000;

function analyzeLibraryText(text: string): ProblemStructure {
  let structure = analyzed.get(text);
  if (!structure) {
    if (analyzed.size >= ANALYZED_MAX) analyzed.clear();
    structure = analyzeProblem(text);
    analyzed.set(text, structure);
  }
  return structure;
}

/** The lexical verdict over the compared candidates (pure: scripts/calibrate-router.ts sweeps it). */
export function decideSimilar(candidates: SimilarCandidate[], tuning: RouterTuning): RouteDecision {
  if (candidates.length === 0) return { decision: "abstain", score: 0, reason: "no_candidates" };
  const byScore = [...candidates].sort((a, b) => b.score - a.score);
  const lexicalBest = byScore[0] as SimilarCandidate;
  const [best, ...others] = byScore.filter(
    (c): c is SimilarCandidate & { problemId: string } => c.sameNumbers && c.problemId !== null,
  );
  if (!best)
    return {
      decision: "abstain",
      score: round(lexicalBest.score),
      reason: lexicalBest.score < tuning.threshold ? "below_threshold" : "numbers_differ",
    };
  // The runner-up is the best candidate that is another problem. One with the same numbers and
  // structure and the same verified answer is the same problem stored twice (the flywheel deposits
  // each phrasing users asked): its block serves as well, so the closer copy (first in BM25 order
  // on a tie) is routed to. A different answer makes it another problem (`both are blue` for
  // `both are red`).
  const second = others.find((c) => !sameProblem(best, c));
  const base = { score: round(best.score), runnerUp: round(second?.score ?? 0) };
  if (best.score < tuning.threshold) return { decision: "abstain", ...base, reason: "below_threshold" };
  if (best.score - (second?.score ?? 0) < tuning.margin)
    return { decision: "abstain", ...base, reason: "ambiguous" };
  if (best.differs) return { decision: "abstain", ...base, reason: best.differs };
  return { decision: "similar", problemId: best.problemId, ...base, reason: "similar" };
}

/** Whether two library problems are one: same numbers, no difference of structure, the same verified answer. */
function sameProblem(a: SimilarCandidate, b: SimilarCandidate): boolean {
  return (
    a.structure !== null &&
    b.structure !== null &&
    a.answer !== null &&
    b.answer !== null &&
    answersEqual(a.answer, b.answer) &&
    sameNumbers(a.structure.numbers, b.structure.numbers) &&
    differences(a.structure, b.structure) === null
  );
}

// ---- problem structure ----------------------------------------------------------------------

/** A problem's structure, as `routeProblem` compares it. */
export interface ProblemStructure {
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
  // Normalized text keeps case where it can carry meaning; concepts are case-blind.
  let text = ` ${normalizedText.toLowerCase()} `;
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
  return {
    concepts: conceptsOf(text),
    asked: new Set([...conceptsOf(question)].filter((c) => ASKED.has(c))),
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
  for (const word of text.match(/[a-z]+/g) ?? []) {
    if (word.length === 1 || STOP_WORDS.has(word) || word in NUMBER_WORDS || word in ORDINALS) continue;
    const concept = canonical(word);
    if (!STOP_WORDS.has(concept)) concepts.add(concept);
  }
  return concepts;
}

/** A word's concept: its stem, or the concept the thesaurus maps that stem to. */
function canonical(word: string): string {
  const stemmed = stem(word);
  return CONCEPT_OF_STEM.get(stemmed) ?? stemmed;
}

/** Why two problems with the same numbers still ask different questions, or null. */
function differences(a: ProblemStructure, b: ProblemStructure): SimilarCandidate["differs"] {
  for (const c of a.asked) if (!b.concepts.has(c)) return "question_differs";
  for (const c of b.asked) if (!a.concepts.has(c)) return "question_differs";
  if (a.askedVariables.size > 0 && b.askedVariables.size > 0 && !sameSet(a.askedVariables, b.askedVariables))
    return "question_differs";
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
function sameNumbers(a: Numbers, b: Numbers): boolean {
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

// ---- the math thesaurus ---------------------------------------------------------------------

/**
 * Clauses that say how to write the answer, not what the problem is: their numbers (`2 decimal
 * places`) are not the problem's.
 */
const FORMAT_CLAUSES: [RegExp, string][] = [
  [
    /\b(?:(?:rounded|round(?:ing)?|correct|accurate)\s+(?:off\s+)?)?to\s+(?:the\s+)?(?:nearest\s+(?:whole\s+)?[a-z]+|(?:\d+|one|two|three|four|five|six)\s+(?:decimal(?:\s+places?)?s?|significant\s+(?:figures|digits)|places?|dp))\b/g,
    " ",
  ],
  [
    /\b(?:(?:give|write|express|state)\s+(?:it\s+|the\s+answer\s+|your\s+answer\s+)?(?:as\s+)?|as\s+)(?:an?\s+)?(?:common\s+|reduced\s+|simplified\s+|irreducible\s+)?fraction\b/g,
    " ",
  ],
  [/\bin\s+(?:lowest|simplest)\s+(?:terms|form)\b/g, " "],
];

/** Phrases for one concept, to one word (applied in order, before the words are split). */
const PHRASES: [RegExp, string][] = [
  [/\b(?:greatest|highest|largest|biggest) common (?:divisor|factor)\b|\bgcf\b|\bhcf\b/g, " gcd "],
  [/\b(?:least|lowest|smallest) common multiple\b/g, " lcm "],
  [/%|\bper ?cent(?:age)?s?\b/g, " percent "],
  [/\(?\bp?mod(?:ulo)?\b/g, " remainder "],
  [/\b(?:km\/h|kmph|kph|km per hour|kilomet(?:er|re)s? (?:per|an|a) hour)\b/g, " kmh "],
  [/\b(?:m\/s|meters? per second|metres? per second)(?![a-z])/g, " mps "],
  [/\b(?:mph|miles? per hour)\b/g, " mph "],
  [
    /\b(cm|mm|km|m|centimet(?:er|re)s?|met(?:er|re)s?|inch(?:es)?|f(?:ee|oo)t|yards?|miles?)\^2\b/g,
    " square $1 ",
  ],
  [/\b(cm|mm|km|m|centimet(?:er|re)s?|met(?:er|re)s?|inch(?:es)?|f(?:ee|oo)t|yards?)\^3\b/g, " cubic $1 "],
  [/(?<=(?:\d|square|cubic|\bin|\bper) ?)cm\b|\bcentimet(?:er|re)s?\b/g, " centimeter "],
  [/(?<=(?:\d|square|cubic|\bin|\bper) ?)mm\b|\bmillimet(?:er|re)s?\b/g, " millimeter "],
  [/(?<=(?:\d|square|cubic|\bin|\bper) ?)km\b|\bkilomet(?:er|re)s?\b/g, " kilometer "],
  [/(?<=(?:\d|square|cubic|\bin|\bper) ?)m\b|\bmet(?:er|re)s?\b/g, " meter "],
  [/(?<=(?:\d|\bin|\bper) ?)l\b|\blit(?:er|re)s?\b/g, " liter "],
  [/(?<=(?:\d|\bin|\bper) ?)(?:h|hrs?)\b|\bhours?\b|\bhourly\b/g, " hour "],
  [/(?<=(?:\d|\bin|\bper) ?)(?:min|mins)\b|\bminutes?\b/g, " minute "],
  [/(?<=(?:\d|\bin|\bper) ?)(?:s|secs?)\b|\bseconds?\b/g, " second "],
  // Squared and cubed lengths measure an area and a volume.
  [
    /\bsquare (?=(?:millimeter|centimeter|meter|kilometer|inch(?:es)?|f(?:oo|ee)t|yards?|miles?)\b)/g,
    " area square ",
  ],
  [
    /\bcubic (?=(?:millimeter|centimeter|meter|kilometer|inch(?:es)?|f(?:oo|ee)t|yards?)\b)/g,
    " volume cubic ",
  ],
  [/\blongest side\b/g, " hypotenuse "],
  [/\b(?:years?|annual(?:ly)?|yearly|per annum|a year)\b/g, " year "],
  [/\b(?:months?|monthly)\b/g, " month "],
  [/\b(?:weeks?|weekly)\b/g, " week "],
  [/\b(?:days?|daily)\b/g, " day "],
  [/\b(?:at least|no (?:less|fewer) than|greater than or equal to|>=)/g, " atleast "],
  [/\b(?:at most|no (?:more|greater) than|less than or equal to|<=)/g, " atmost "],
  // `3 more than the one before` is a difference, not a condition.
  [/(?<!\d )\b(?:more|greater|larger|bigger|higher) than\b|(?<!\S)>(?!\S)/g, " morethan "],
  [/(?<!\d )\b(?:less|fewer|smaller|lower) than\b|(?<!\S)<(?!\S)/g, " lessthan "],
  [/\bwithout replac\w*|\bnot (?:replac|put) ?\w*(?: back)?/g, " withoutreplacement "],
  [/\bwith replac\w*/g, " withreplacement "],
  [/\b(?:towards?|approach\w*) (?:each other|one another)\b/g, " toward "],
  [/\b(?:in the same direction|catch(?:es)? up(?: with)?|overtakes?)\b/g, " samedirection "],
  [/\b(?:lined|line) up\b|\bin (?:a )?(?:row|line)\b|\bin (?:different |distinct )?orders?\b/g, " arrange "],
  [/\badd(?:s|ed)? up\b|\btotal of\b|\btotal(?:s|ing|ling)\b/g, " sum "],
  [/\btaken away\b|\btake away\b|\btaken out\b|\btake out\b/g, " remove "],
  [/\bgo(?:es)? up\b|\bwent up\b/g, " increase "],
  [/\bside by side\b|\bnext to each other\b|\btogether\b/g, " together "],
  [/(?<=\d)!|\bfactorial\b/g, " factorial "],
];

/** Words that name the same concept (word forms meet through `stem`). */
const SYNONYMS: Record<string, string> = {
  bigger: "larger",
  greater: "larger",
  higher: "larger",
  biggest: "largest",
  greatest: "largest",
  highest: "largest",
  maximum: "largest",
  lesser: "smaller",
  lower: "smaller",
  least: "smallest",
  lowest: "smallest",
  minimum: "smallest",
  solution: "root",
  chance: "probability",
  likelihood: "probability",
  mean: "average",
  factor: "divisor",
  way: "way",
  arrangement: "way",
  ordering: "way",
  permutation: "way",
  arranged: "arrange",
  permute: "arrange",
  seat: "arrange",
  stand: "arrange",
  place: "arrange",
  chose: "choose",
  chosen: "choose",
  select: "choose",
  pick: "choose",
  form: "choose",
  die: "dice",
  thrown: "roll",
  throw: "roll",
  toss: "roll",
  cast: "roll",
  drawn: "draw",
  price: "cost",
  costing: "cost",
  bought: "buy",
  purchase: "buy",
  sold: "sell",
  paid: "pay",
  spent: "spend",
  velocity: "speed",
  fast: "speed",
  long: "length",
  wide: "width",
  breadth: "width",
  high: "height",
  tall: "height",
  deep: "depth",
  met: "meet",
  full: "fill",
  grew: "increase",
  grow: "increase",
  grown: "increase",
  rose: "increase",
  rise: "increase",
  gain: "increase",
  progression: "sequence",
  series: "sequence",
  adjacent: "together",
  distinct: "different",
  residents: "population",
  resident: "population",
  inhabitant: "population",
  addition: "sum",
  divisible: "divide",
  division: "divide",
  multiple: "times",
  twice: "times",
  double: "times",
};

/** Concepts that name what a question asks for (compared in the question sentence). */
const ASKED = new Set(
  (
    "sum product quotient ratio difference perimeter area circumference volume surface average median " +
    "mode gcd lcm remainder probability percent smallest largest smaller larger even odd prime root " +
    "digit factorial divisor hypotenuse zero"
  ).split(" "),
);

/**
 * Concept groups whose members change the problem when swapped (units of one dimension, the
 * comparison in a condition, drawing with or without replacement, order mattering or not, the
 * direction of motion). `strict`: absent on one side and present on the other differs too.
 */
const EXCLUSIVE: { members: string[]; strict: boolean }[] = [
  { members: ["second", "minute", "hour", "day", "week", "month", "year"], strict: false },
  {
    members: ["millimeter", "centimeter", "meter", "kilometer", "inch", "foot", "yard", "mile"],
    strict: false,
  },
  { members: ["kmh", "mps", "mph"], strict: false },
  { members: ["atleast", "atmost", "morethan", "lessthan"], strict: true },
  { members: ["withoutreplacement", "withreplacement"], strict: false },
  { members: ["arrange", "choose"], strict: false },
  { members: ["toward", "samedirection"], strict: false },
];

/** Stem -> concept: the thesaurus, and every concept's own stem (`minutes` -> `minute`). */
const CONCEPT_OF_STEM = new Map<string, string>([
  ...[...ASKED, ...EXCLUSIVE.flatMap((g) => g.members), ...Object.values(SYNONYMS)].map(
    (c) => [stem(c), c] as [string, string],
  ),
  ...Object.entries(SYNONYMS).map(([word, c]) => [stem(word), c] as [string, string]),
]);

/** Letters that are units, not variables, when they stand alone. */
const UNIT_LETTERS = new Set(["m", "s", "l", "h", "g", "k"]);

/** Function words, question phrasing and filler: they say how something is asked, not what. */
const STOP_WORDS = new Set(
  (
    "a an the of is are was were be been being to in on at by for from with and or if as than then so " +
    "it its this that these those there their them they he she his her him we you your i me my our " +
    "what which when who whom whose how many much does do did have has had will would should can could " +
    "may might must shall solve find compute calculate determine evaluate count give get answer value express " +
    "write result number numbers exactly each every other both all any some also only just into out up " +
    "down about over per such where while same one ones rest remaining remain after before first then " +
    "left possible different particular specific certain given respectively follow following show " +
    "need needed take taken takes make made let suppose assume equal equals dollar dollars cent cents " +
    "unit units alone own itself themselves another whole entire altogether total round rounded " +
    "nearest decimal place places"
  ).split(" "),
);

const NUMBER_WORDS: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
  hundred: 100,
  thousand: 1000,
  dozen: 12,
};

/** Ordinals that are positions (`the tenth term` = `the 10th term`); `first`..`third` are too common. */
const ORDINALS: Record<string, number> = {
  fourth: 4,
  fifth: 5,
  sixth: 6,
  seventh: 7,
  eighth: 8,
  ninth: 9,
  tenth: 10,
  eleventh: 11,
  twelfth: 12,
  fifteenth: 15,
  twentieth: 20,
  thirtieth: 30,
  fiftieth: 50,
  hundredth: 100,
};

/** Words that state a factor (`twice as old`, `double the previous term`). */
const MULTIPLES: Record<string, number> = { twice: 2, double: 2, doubles: 2, triple: 3, thrice: 3 };

/**
 * A light stemmer: plural and verb endings (`divisors`, `arranged`, `painting`), so word forms of
 * one word meet; not a full Porter stemmer, whose merges surprise (`general` = `generous`).
 */
function stem(word: string): string {
  let w = word;
  if (w.length > 4 && w.endsWith("ies")) w = `${w.slice(0, -3)}y`;
  else if (w.length > 4 && /(?:ss|sh|ch|x)es$/.test(w)) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith("s") && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (w.length > 5 && w.endsWith("ing")) w = w.slice(0, -3);
  else if (w.length > 4 && w.endsWith("ed") && !w.endsWith("eed")) w = w.slice(0, -2);
  if (w.length > 4 && w.endsWith("e")) w = w.slice(0, -1);
  // `stopped` -> `stopp` -> `stop`
  if (w.length > 4 && /([b-df-hj-np-tv-z])\1$/.test(w) && !/(?:ll|ss|zz)$/.test(w)) w = w.slice(0, -1);
  return w;
}

/**
 * The FTS query: the query's concepts plus the words each concept stands for, so the index finds
 * library problems that say it another way; with `everyWord`, the query's own words too.
 */
function searchText(normalizedText: string, query: ProblemStructure, everyWord: boolean): string {
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

/**
 * The words a concept stands for in library text, where they differ from the concept itself
 * (templates are searched as written). Few on purpose: every word searched costs a BM25 score
 * for each template that holds it.
 */
const SEARCH_EXPANSIONS: Record<string, string> = {
  gcd: "greatest common divisor",
  lcm: "least common multiple",
  remainder: "mod divided",
  percent: "percentage",
  larger: "bigger greater",
  root: "solution",
  probability: "chance",
  average: "mean",
  divisor: "factor",
  arrange: "arranged lined",
  choose: "chosen selected",
  cost: "price",
  kmh: "km",
  mps: "meters second",
  together: "adjacent",
};

function dice(a: Set<string>, b: Set<string>): number {
  if (a.size + b.size === 0) return 0;
  let shared = 0;
  for (const w of a) if (b.has(w)) shared++;
  return (2 * shared) / (a.size + b.size);
}

function sameSet(a: Set<string>, b: Set<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
