/**
 * Voting over a solve's samples: each sample casts up to two votes, its stated answer and its
 * program's output (when the program ran cleanly), grouped with `answersEqual`. Runtime-neutral.
 */
import { answersEqual } from "./answers.js";

export interface Ballot {
  stated: string | null;
  program: string | null;
}

export interface VoteCount {
  answer: string;
  stated: number;
  programs: number;
}

export interface Tally {
  answer: string | null;
  /** Votes for the answer over all possible votes (two per ballot). */
  confidence: number;
  /** No two programs printed different answers. */
  programsAgree: boolean;
  unsure: boolean;
  votes: VoteCount[];
}

/** Counts the votes; ties go to the answer with more program votes, then to the first seen. */
export function tally(ballots: readonly Ballot[], minConfidence: number): Tally {
  const votes: VoteCount[] = [];
  const cast = (answer: string | null, kind: "stated" | "programs") => {
    if (answer === null || answer.trim() === "") return;
    const group = votes.find((v) => answersEqual(v.answer, answer));
    if (group) group[kind]++;
    else votes.push({ answer: answer.trim(), stated: 0, programs: 0, [kind]: 1 });
  };
  for (const b of ballots) {
    cast(b.stated, "stated");
    cast(b.program, "programs");
  }
  let best: VoteCount | null = null;
  for (const v of votes) {
    const total = v.stated + v.programs;
    const bestTotal = best ? best.stated + best.programs : -1;
    if (total > bestTotal || (best && total === bestTotal && v.programs > best.programs)) best = v;
  }
  const possible = 2 * ballots.length;
  const confidence = best && possible > 0 ? (best.stated + best.programs) / possible : 0;
  const programsAgree = votes.filter((v) => v.programs > 0).length <= 1;
  return {
    answer: best?.answer ?? null,
    confidence,
    programsAgree,
    unsure: best === null || confidence < minConfidence || !programsAgree,
    votes,
  };
}
