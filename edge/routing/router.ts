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
 *   and the question's role must be the same (question-roles.ts: a negated question, another of a
 *   group of alternatives, asked and given swapped, a number counting other things, the same data
 *   with another question are near misses);
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
 * alone). The data access is the narrow `RouterLibrary`, so the decision is one plain function
 * (`libraryReader` serves it with edge/db/'s queries). The structure analysis is in
 * problem-structure.ts, the thesaurus in thesaurus.ts; docs/router.md has the measurements.
 */
import { answersEqual } from "../../shared/answers.js";
import { sha256Hex } from "../../shared/hash.js";
import { problemTemplate } from "../../shared/normalize.js";
import type { Database } from "../db/database.js";
import {
  findByTemplate,
  findVerifiedByFingerprint,
  newestReadyBlock,
  type TemplateMatch,
  type VerifiedAnswer,
} from "../db/library.js";
import {
  type LibrarySearch,
  type SearchedProblem,
  type SearchLimits,
  searchLibrary,
} from "../db/library-search.js";
import {
  analyzeProblem,
  dice,
  differences,
  type Numbers,
  type ProblemStructure,
  type StructureDifference,
  sameNumbers,
  searchText,
} from "./problem-structure.js";

export type { SearchLimits } from "../db/library-search.js";
export { analyzeProblem, type Numbers, type ProblemStructure } from "./problem-structure.js";

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
export type ProblemRow = SearchedProblem;

/** What the router reads from the library (`libraryReader` serves it from the database). */
export interface RouterLibrary {
  /** The current verified solution of the problem with this fingerprint, or null. */
  verifiedByFingerprint(fingerprint: string): Promise<VerifiedAnswer | null>;
  /**
   * Every problem with exactly this template, oldest first, with its current verified solution
   * and ready blocks (oldest first).
   */
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

/** What `RouterLibrary.search` found. */
export type SearchResult = LibrarySearch;

/** The router's view of a libSQL library database (the queries are edge/db/'s). */
export function libraryReader(db: Database): RouterLibrary {
  return {
    verifiedByFingerprint: (fingerprint) => findVerifiedByFingerprint(db, fingerprint),
    byTemplate: (template) => findByTemplate(db, template),
    search: (text, numbers, limits) => searchLibrary(db, text, numbers, limits),
    newestReadyBlock: async (problemId) => (await newestReadyBlock(db, problemId))?.sha256 ?? null,
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
  differs: StructureDifference | null;
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

/**
 * Whether two library problems are one: same numbers, no difference of structure, the same
 * verified answer. The question roles are not compared: with the same answer, a difference in what
 * the two ask (`sum of the first 20 terms` and a copy with a filler word in its question) changes
 * nothing the route serves.
 */
function sameProblem(a: SimilarCandidate, b: SimilarCandidate): boolean {
  return (
    a.structure !== null &&
    b.structure !== null &&
    a.answer !== null &&
    b.answer !== null &&
    answersEqual(a.answer, b.answer) &&
    sameNumbers(a.structure.numbers, b.structure.numbers) &&
    differences(a.structure, b.structure, false) === null
  );
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
