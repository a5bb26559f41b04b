/**
 * The router: sends a normalized query to one library problem or abstains.
 * Exact fingerprint with a verified answer -> `answer`; exact template (same words, new numbers) ->
 * `template`; otherwise the FTS5 BM25 candidates over templates are re-scored here and the best one
 * is `similar` only when all of these hold, else the router abstains (no graft):
 * - score: the Dice overlap of content words (function words dropped, light stemming, a small math
 *   thesaurus: `gcd` = `greatest common divisor`, `%` = `percent`, ...) is at least `threshold`;
 *   Dice is in [0, 1] whatever the library's size, unlike a raw BM25 score;
 * - margin: it beats the runner-up's score by at least `margin`;
 * - the same question: both name the same quantities to find (`QUESTION_WORDS`: sum, area,
 *   perimeter, larger, remainder, ...);
 * - a rewrite, not an edit: a query that keeps a library problem's wording but swaps a few words
 *   or signs (`years` -> `months`, `x` -> `y`, `+` -> `-`) asks another question. The word-level
 *   edit distance (operators count as words) relative to the longer text must reach `minRewrite`,
 *   or `minRewriteNoNewWords` when the query has no content word the candidate lacks; a distance
 *   of 0 (the same words once the thesaurus applies) is the same problem;
 * - the same numbers: the query states exactly the candidate problem's numbers (as a multiset;
 *   number words like `five` count), so the grafted worked solution is about this very instance.
 * Pure scoring lives in `decideSimilar`, so scripts/calibrate-router.ts can sweep the constants.
 */
import { sha256Hex } from "../../shared/hash.js";
import { problemTemplate } from "../../shared/normalize.js";
import type { Database } from "../db/database.js";
import { findVerifiedByFingerprint, newestReadyBlock, problemsOfTemplate } from "../db/library.js";
import { searchTemplates } from "../db/library-search.js";

export type RouteKind = "answer" | "template" | "similar" | "abstain";
export type RouteReason =
  | "fingerprint"
  | "template"
  | "similar"
  | "no_candidates"
  | "below_threshold"
  | "ambiguous"
  | "near_miss"
  | "question_differs"
  | "numbers_differ";

/** A routing decision; `score` is 1 for exact matches, the best candidate's Dice score otherwise. */
export interface RouteDecision {
  decision: RouteKind;
  problemId?: string;
  /** The newest ready block of the problem, when it has one. */
  blockId?: string;
  score: number;
  runnerUp?: number;
  reason: RouteReason;
}

/** A decision of the lexical step (`similar` or `abstain`). */
export type LexicalDecision = RouteDecision & { reason: Exclude<RouteReason, "fingerprint" | "template"> };

/** The constants of the `similar` decision (see the module comment). */
export interface RouterTuning {
  threshold: number;
  margin: number;
  minRewrite: number;
  minRewriteNoNewWords: number;
}

/**
 * Calibrated with `npx tsx scripts/calibrate-router.ts` on test/fixtures/router-*.jsonl (23
 * paraphrases to route, 30 out-of-library queries to abstain on): each constant is the middle of
 * the interval in which the whole dev set comes out right with the others fixed (the script prints
 * the intervals: threshold 0-0.285, margin 0-0.06, minRewrite 0.425-0.45, minRewriteNoNewWords
 * 0.045-0.235). The numbers check does most of the abstaining; minRewrite is the tightest (near
 * misses reach 0.42, paraphrases start at 0.45), and a new library should be re-calibrated.
 */
export const ROUTER_TUNING: RouterTuning = {
  threshold: 0.143,
  margin: 0.03,
  minRewrite: 0.438,
  minRewriteNoNewWords: 0.14,
};

/** How many BM25 candidates are re-scored. */
const CANDIDATES = 10;

/** Routes a normalized problem text (shared/normalize `normalizeProblem`). */
export async function routeProblem(
  db: Database,
  normalizedText: string,
  tuning: Partial<RouterTuning> = {},
): Promise<RouteDecision> {
  const hit = await findVerifiedByFingerprint(db, await sha256Hex(normalizedText));
  if (hit)
    return withBlock(db, { decision: "answer", problemId: hit.problem.id, score: 1, reason: "fingerprint" });
  const { template } = problemTemplate(normalizedText);
  const [same] = await problemsOfTemplate(db, template, 1);
  if (same) return withBlock(db, { decision: "template", problemId: same.id, score: 1, reason: "template" });
  return routeSimilar(db, normalizedText, tuning);
}

/** The lexical step alone: a reworded library problem (`similar`) or `abstain`. */
export async function routeSimilar(
  db: Database,
  normalizedText: string,
  tuning: Partial<RouterTuning> = {},
): Promise<LexicalDecision> {
  const best = await bestCandidate(db, normalizedText);
  const verdict = decideSimilar(best, { ...ROUTER_TUNING, ...tuning });
  if (verdict.decision !== "similar" || !best) return verdict;
  const numbers = numberKeys(normalizedText);
  const rows = await problemsOfTemplate(db, best.template);
  const match = rows.find((r) => sameNumbers(numbers, numberKeys(r.normalizedText)));
  if (!match) return { ...verdict, decision: "abstain", reason: "numbers_differ" };
  return withBlock(db, { ...verdict, problemId: match.id });
}

/** What the lexical step knows about the best candidate; null when FTS found nothing. */
export interface CandidateFeatures {
  template: string;
  /** Dice overlap of content words, in [0, 1]. */
  score: number;
  /** The next candidate's score (0 when there is none). */
  runnerUp: number;
  /** Word-level edit distance over the longer word count, in [0, 1]. */
  editRatio: number;
  /** Whether every content word of the query is also in the candidate. */
  noNewWords: boolean;
  /** Whether one of them names a quantity to find (`QUESTION_WORDS`) that the other does not. */
  questionDiffers: boolean;
}

/** The best-scoring FTS candidate for the text, with the features `decideSimilar` uses. */
export async function bestCandidate(db: Database, normalizedText: string): Promise<CandidateFeatures | null> {
  const query = analyze(problemTemplate(normalizedText).template);
  if (query.content.size === 0) return null;
  // Content words first: function words match nearly every template and make BM25 score them all.
  // Some but few hits (a small library, or one holding problems stated mostly in symbols, like
  // `what is #% of #`): search every word. No hit: no template shares a content word, so none
  // could score above 0.
  let candidates = await searchTemplates(db, searchText(query, false), CANDIDATES);
  if (candidates.length > 0 && candidates.length < CANDIDATES)
    candidates = await searchTemplates(db, searchText(query, true), CANDIDATES);
  const scored = candidates
    .map((c) => ({ template: c.template, words: analyze(c.template) }))
    .map((c) => ({ ...c, score: dice(query.content, c.words.content) }))
    // stable: equal scores keep BM25 order
    .sort((a, b) => b.score - a.score);
  const [best, second] = scored;
  if (!best) return null;
  return {
    template: best.template,
    score: best.score,
    runnerUp: second?.score ?? 0,
    editRatio:
      editDistance(query.words, best.words.words) / Math.max(query.words.length, best.words.words.length),
    noNewWords: [...query.content].every((w) => best.words.content.has(w)),
    questionDiffers: [...QUESTION_WORDS].some((w) => query.content.has(w) !== best.words.content.has(w)),
  };
}

/** The lexical verdict on the best candidate (numbers are checked afterwards, against the rows). */
export function decideSimilar(best: CandidateFeatures | null, tuning: RouterTuning): LexicalDecision {
  if (!best) return { decision: "abstain", score: 0, reason: "no_candidates" };
  const base = { score: round(best.score), runnerUp: round(best.runnerUp) };
  if (best.score < tuning.threshold) return { decision: "abstain", ...base, reason: "below_threshold" };
  if (best.score - best.runnerUp < tuning.margin)
    return { decision: "abstain", ...base, reason: "ambiguous" };
  if (best.questionDiffers) return { decision: "abstain", ...base, reason: "question_differs" };
  // The same words in the same order once canonical forms are applied: the same problem.
  if (best.editRatio === 0) return { decision: "similar", ...base, reason: "similar" };
  const minRewrite = best.noNewWords ? tuning.minRewriteNoNewWords : tuning.minRewrite;
  if (best.editRatio < minRewrite) return { decision: "abstain", ...base, reason: "near_miss" };
  return { decision: "similar", ...base, reason: "similar" };
}

// ---- text analysis --------------------------------------------------------------------------

/** Canonical forms for the same concept (a small math thesaurus), applied before tokenizing. */
const THESAURUS: [RegExp, string][] = [
  [/\b(?:greatest common (?:divisor|factor)|highest common factor|gcf|hcf)\b/g, " gcd "],
  [/\b(?:least|lowest) common multiple\b/g, " lcm "],
  [/%|\bper ?cent(?:age)?s?\b/g, " percent "],
  [/\b(?:p?mod|modulo)\b/g, " remainder "],
  [/\bbigger\b/g, "larger"],
  [/\bsolutions?\b/g, "root"],
  [/\bchance\b/g, "probability"],
  [/\btotal\b/g, "sum"],
];

/** The words each canonical form stands for, added to the FTS query so the index finds them. */
const SEARCH_EXPANSIONS: Record<string, string> = {
  gcd: "greatest common divisor factor",
  lcm: "least common multiple",
  remainder: "mod modulo divided",
  percent: "percentage",
  larger: "bigger",
  root: "solution",
  probability: "chance",
  sum: "total",
};

/**
 * Words that name what a problem asks for: a query and a candidate that disagree on any of them
 * ask different questions (sum vs count, perimeter vs area, smaller vs larger root, gcd vs lcm).
 */
const QUESTION_WORDS = new Set(
  (
    "sum product quotient ratio perimeter area circumference volume average mean median mode gcd lcm " +
    "remainder probability percent smallest largest smaller larger least greatest minimum maximum " +
    "even odd prime root digit"
  ).split(" "),
);

/** Function words and question phrasing: they say how something is asked, not what. */
const STOP_WORDS = new Set(
  (
    "a an the of is are was were be been to in on at by for from with and or if as than then so it its " +
    "this that these those there their them they he she his her him we you your i me my our what which " +
    "when who whom how many much does do did have has had will would should can could may might must " +
    "find compute calculate determine evaluate count give get answer value express write"
  ).split(" "),
);

const NUMBER_WORDS: Record<string, number> = {
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
};

interface Analyzed {
  /** Every word (numbers as `#`), stemmed, in order. */
  words: string[];
  content: Set<string>;
}

function analyze(template: string): Analyzed {
  // Normalized text keeps case where it can carry meaning; word matching here is case-blind.
  let text = template.toLowerCase();
  for (const [pattern, canonical] of THESAURUS) text = text.replace(pattern, canonical);
  const words = (text.match(/[a-z]+|#|[-+*/^=<>!]/g) ?? []).map((w) => (w in NUMBER_WORDS ? "#" : stem(w)));
  return { words, content: new Set(words.filter((w) => /^[a-z]/.test(w) && !STOP_WORDS.has(w))) };
}

/** Plural endings only: enough to equate `divisors` and `divisor` without a stemmer's surprises. */
function stem(word: string): string {
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (word.length > 3 && word.endsWith("s") && !/(?:ss|us|is)$/.test(word)) return word.slice(0, -1);
  return word;
}

/** The FTS query text: the content words (or every word) plus what the canonical forms stand for. */
function searchText(query: Analyzed, everyWord: boolean): string {
  const words = everyWord ? query.words.filter((w) => w !== "#") : [...query.content];
  for (const w of query.content) if (SEARCH_EXPANSIONS[w]) words.push(SEARCH_EXPANSIONS[w]);
  return words.join(" ");
}

function dice(a: Set<string>, b: Set<string>): number {
  if (a.size + b.size === 0) return 0;
  let shared = 0;
  for (const w of a) if (b.has(w)) shared++;
  return (2 * shared) / (a.size + b.size);
}

/** Levenshtein distance over words. */
function editDistance(a: string[], b: string[]): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(
        (prev[j] as number) + 1,
        (cur[j - 1] as number) + 1,
        (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    prev = cur;
  }
  return prev[b.length] as number;
}

/** The text's numbers as sorted multisets of exact literals: digits alone, and digits plus number words. */
function numberKeys(normalizedText: string): [string, string] {
  const digits = problemTemplate(normalizedText).literals;
  const words = (normalizedText.toLowerCase().match(/[a-z]+/g) ?? []).flatMap((w) =>
    NUMBER_WORDS[w] === undefined ? [] : [String(NUMBER_WORDS[w])],
  );
  const key = (xs: string[]) => [...xs].sort().join(",");
  return [key(digits), key([...digits, ...words])];
}

function sameNumbers(a: [string, string], b: [string, string]): boolean {
  return a[0] === b[0] || a[1] === b[1];
}

/** Adds the problem's newest ready block to a decision. */
async function withBlock<T extends RouteDecision>(db: Database, decision: T): Promise<T> {
  if (!decision.problemId) return decision;
  const block = await newestReadyBlock(db, decision.problemId);
  return block ? { ...decision, blockId: block.sha256 } : decision;
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
