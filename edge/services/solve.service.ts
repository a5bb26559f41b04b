/**
 * Answering one problem: normalize, then act on the router's decision (edge/routing/router.ts
 * `routeProblem`, the same function `kvgraft eval router` and `kvgraft bench router` measure):
 * `answer` (an exact fingerprint with a current verified solution) answers from the library with
 * no GPU call; `template` (same words, new numbers): a parametric verified program of the
 * template is re-run on the new numbers in the GPU node's sandbox when they play the roles they
 * played at deposit (`transfer`, edge/routing/transfer.ts; else the response's `transferRefused`
 * says why), else the decision's block is grafted and the model answers after it (`graft`);
 * `similar` (a re-worded library problem with the same numbers): its block is grafted (never
 * transfer: its template differs); `abstain`: the model answers alone (`model`), or nothing does
 * (`none`) when the mode forbids it. Every query is logged; unverified answers queue for the
 * flywheel when it is on. A solve that fails (GPU node down, say) is logged with source "error".
 */
import { answersEqual, extractAnswer } from "../../shared/answers.js";
import { DomainError } from "../../shared/errors.js";
import { parseFinal } from "../../shared/final-part.js";
import { renderGraftQuery } from "../../shared/graft-prompt.js";
import { sha256Hex } from "../../shared/hash.js";
import { normalizeProblem, problemTemplate } from "../../shared/normalize.js";
import type { GenerationResult } from "../../shared/protocol.js";
import type { Energy, SolveResult } from "../../shared/solve-protocol.js";
import { quarantinedByNode } from "../cluster/gpu-failure.js";
import type { ModelCallOptions } from "../cluster/gpu-pool.js";
import { enqueueForKey } from "../db/flywheel-queue.js";
import { logQuery, setBlockState } from "../db/library.js";
import type { Deps } from "../http.js";
import { libraryReader, type RouteDecision, routeProblem } from "../routing/router.js";
import { tryTransfer } from "../routing/transfer.js";
import type { SolveRequest, SolveResponse } from "../schemas.js";

/** Who asked, for the log and the response. */
export interface SolveContext {
  keyId: string | null;
  requestId: string;
  /** Monotonic start of the request (Clock.monotonicMs). */
  startedMs: number;
}

type Outcome = Omit<
  SolveResponse,
  "cost" | "hashes" | "queued" | "queryId" | "requestId" | "verification" | "transferRefused"
> & {
  verification?: SolveResponse["verification"];
  transferRefused?: SolveResponse["transferRefused"];
  /** `energy`: measured by the GPU node on the sampled solve only (null elsewhere, or without nvidia-smi). */
  gpu: { tokensIn: number; tokensOut: number; ms: number; energy: Energy | null };
  outputSha256: string | null;
  /** Set by the sampled model path: only an unsure answer queues for the flywheel. */
  unsure?: boolean;
};

const NO_GPU = { tokensIn: 0, tokensOut: 0, ms: 0, energy: null };

/**
 * Solves one problem; see the module comment for the order of the paths. With `model.onToken` the
 * graft and model paths stream the node's tokens as they come; aborting `model.signal` aborts the
 * GPU call.
 */
export async function solve(
  deps: Deps,
  req: SolveRequest,
  ctx: SolveContext,
  model: ModelCallOptions = {},
): Promise<SolveResponse> {
  const normalized = normalizeProblem(req.problem);
  const fingerprint = await sha256Hex(normalized);
  const maxTokens = Math.min(
    req.maxTokens ?? deps.config.limits.solveMaxTokens,
    deps.config.limits.solveMaxTokens,
  );

  let outcome: Outcome;
  try {
    outcome = await route(deps, req, normalized, maxTokens, model);
  } catch (err) {
    // A failed solve is logged too (source "error"), then answered by the error handler.
    await deps.writes.logOrDrop(deps.logger, "query", () =>
      logQuery(deps.db, {
        keyId: ctx.keyId,
        fingerprint,
        route: { reason: err instanceof DomainError ? err.code : "internal_error" },
        source: "error",
        cost: { edgeMs: round(deps.clock.monotonicMs() - ctx.startedMs) },
        confidence: null,
        verified: false,
      }),
    );
    throw err;
  }

  const edgeMs = round(deps.clock.monotonicMs() - ctx.startedMs - outcome.gpu.ms);
  const cost = {
    gpuTokensIn: outcome.gpu.tokensIn,
    gpuTokensOut: outcome.gpu.tokensOut,
    gpuMs: round(outcome.gpu.ms),
    edgeMs: Math.max(0, edgeMs),
    energy: outcome.gpu.energy,
  };
  // With the flywheel switched off nothing is queued (edge/config.ts KVGRAFT_FLYWHEEL).
  const queued =
    deps.config.flywheel.enabled &&
    !outcome.verified &&
    outcome.source !== "library" &&
    outcome.unsure !== false;
  // An answer is not failed because its log line could not be written: the line is dropped and
  // counted (queryId null); a flywheel enqueue that fails still fails the request (it says queued).
  const [queryId] = await Promise.all([
    deps.writes.logOrDrop(deps.logger, "query", () =>
      logQuery(deps.db, {
        keyId: ctx.keyId,
        fingerprint,
        // A refused transfer is logged with its code, so refusals can be counted per template.
        route: outcome.transferRefused
          ? { ...outcome.route, transferRefused: outcome.transferRefused.code }
          : outcome.route,
        source: outcome.source,
        cost,
        confidence: outcome.confidence,
        verified: outcome.verified,
      }),
    ),
    queued ? enqueueForKey(deps.db, { keyId: ctx.keyId, problem: req.problem, fingerprint }) : null,
  ]);
  return {
    answer: outcome.answer,
    text: outcome.text,
    source: outcome.source,
    verified: outcome.verified,
    verification: outcome.verification ?? null,
    transferRefused: outcome.transferRefused ?? null,
    confidence: outcome.confidence,
    route: outcome.route,
    cost,
    hashes: {
      problemFingerprint: fingerprint,
      answerSha256: outcome.answer === null ? null : await sha256Hex(outcome.answer),
      outputSha256: outcome.outputSha256,
      blockSha256: outcome.route.blockId,
    },
    queued,
    queryId,
    requestId: ctx.requestId,
  };
}

async function route(
  deps: Deps,
  req: SolveRequest,
  normalized: string,
  maxTokens: number,
  model: ModelCallOptions,
): Promise<Outcome> {
  const decision = await routeProblem(libraryReader(deps.db), normalized);
  // 1. Fast path: the exact problem has a verified answer. Nothing below this line runs.
  if (decision.verified) {
    const hit = decision.verified;
    return {
      answer: hit.answer,
      text: null,
      source: "library",
      verified: true,
      verification: {
        method: "library_answer",
        solutionId: hit.solution.id,
        params: "same_problem",
        answerCheck: null,
        note: "The stored answer of this exact problem, printed by its program in the sandbox at deposit.",
      },
      confidence: 1,
      route: {
        decision: "answer",
        blockId: decision.blockId ?? null,
        problemId: hit.problem.id,
        score: 1,
        reason: "fingerprint",
      },
      gpu: NO_GPU,
      outputSha256: null,
    };
  }
  if (req.mode === "verified") return none("mode_verified_only");

  // 2. Same template, new numbers: a transfer of a verified program, when the numbers fit it.
  let transferRefused: Outcome["transferRefused"] = null;
  if (decision.matches) {
    const { template, literals } = problemTemplate(normalized);
    const transfer = await tryTransfer(
      deps.gpu,
      deps.clock,
      { normalized, template, literals },
      decision.matches,
    );
    if (transfer?.ok)
      return {
        answer: transfer.answer,
        text: null,
        source: "transfer",
        verified: true,
        verification: transfer.verification,
        confidence: null,
        route: {
          decision: "template",
          blockId: transfer.match.blocks.at(-1)?.sha256 ?? null,
          problemId: transfer.match.problem.id,
          score: 1,
          reason: "template_transfer",
        },
        gpu: { tokensIn: 0, tokensOut: 0, ms: transfer.ms, energy: null },
        outputSha256: null,
      };
    // Not a transfer (the response says why): fall through to grafting the decision's block.
    transferRefused = transfer?.refusal ?? null;
  }
  // 3. The decision's block (the template's, or a re-worded library problem's), if it has one.
  const target = graftTarget(decision);
  const blockId = target.blockId;
  if (blockId !== null) {
    const started = deps.clock.monotonicMs();
    // The query as the block's text continues (shared/graft-prompt.ts): the model answers with the
    // same final part {answer, program} as a solve, and the program runs on the query's numbers.
    const { literals: params } = problemTemplate(req.problem);
    const result = await deps.gpu
      .graft({ blockId, query: renderGraftQuery(req.problem, params), maxTokens }, model)
      .catch(async (err: unknown) => {
        // The node found the block damaged (bytes, or a probe that no longer reproduces) and
        // quarantined it: stop routing to it.
        if (quarantinedByNode(err))
          await setBlockState(deps.db, blockId, "quarantined").catch(() => undefined);
        throw err;
      });
    const outcome = generated(result, deps.clock.monotonicMs() - started, "graft", target);
    return { ...outcome, answer: await graftAnswer(deps, result.text, params), transferRefused };
  }

  // 4. Nothing in the library fits.
  if (req.mode === "library") return { ...none("mode_library_only"), transferRefused };
  const started = deps.clock.monotonicMs();
  const solved = await deps.gpu.solve({ problem: req.problem, maxTokens }, model);
  return { ...sampled(solved, deps.clock.monotonicMs() - started, target), transferRefused };
}

/**
 * A graft's answer: what its final part's program prints on the query's numbers when it runs
 * cleanly, else the answer the final part states (else the text's last line, for a model that does
 * not write a final part). Never verified: a graft is the model's work, checked as a solve's is.
 */
async function graftAnswer(deps: Deps, text: string, params: readonly string[]): Promise<string | null> {
  const final = parseFinal(text.trim());
  if (final.program.trim() !== "") {
    const run = await deps.gpu.runProgram({ program: final.program, params }).catch(() => null);
    if (run?.verdict === "ok" && run.answer !== null) return run.answer;
  }
  return final.answer.trim() || extractAnswer(text);
}

/**
 * The sampled solve's outcome: the vote is the answer, the agreement share the confidence, and
 * the text a sample that voted for it (reasoning, then its final part).
 */
function sampled(result: SolveResult, ms: number, r: Outcome["route"]): Outcome {
  const { answer } = result;
  const voter =
    answer === null
      ? undefined
      : result.samples.find((s) =>
          [s.answer, s.run?.verdict === "ok" ? s.run.answer : null].some(
            (a) => a !== null && answersEqual(a, answer),
          ),
        );
  return {
    answer,
    text: voter ? `${voter.reasoning}\n${voter.final}` : null,
    source: "model",
    verified: false,
    confidence: result.confidence,
    route: r,
    gpu: { tokensIn: result.tokensIn, tokensOut: result.tokensOut, ms, energy: result.energy },
    outputSha256: result.outputSha256,
    unsure: result.unsure,
  };
}

/** The response's route for a `template`, `similar` or `abstain` decision; `blockId` null: nothing to graft. */
function graftTarget(decision: RouteDecision): Outcome["route"] {
  const blockId = decision.blockId ?? null;
  const routed = decision.decision === "template" || decision.decision === "similar";
  return {
    decision: decision.decision,
    blockId,
    problemId: decision.problemId ?? null,
    score: decision.score,
    ...(decision.runnerUp === undefined ? {} : { runnerUp: decision.runnerUp }),
    reason:
      routed && !blockId ? "no_block" : decision.reason === "template" ? "template_graft" : decision.reason,
  };
}

function none(reason: "mode_verified_only" | "mode_library_only"): Outcome {
  return {
    answer: null,
    text: null,
    source: "none",
    verified: false,
    confidence: null,
    route: { decision: "abstain", blockId: null, problemId: null, score: null, reason },
    gpu: NO_GPU,
    outputSha256: null,
  };
}

/** A generation's outcome; `ms` is the round trip the edge waited for (the GPU's share of the time). */
function generated(
  result: GenerationResult,
  ms: number,
  source: "graft" | "model",
  r: Outcome["route"],
): Outcome {
  return {
    answer: extractAnswer(result.text),
    text: result.text,
    source,
    verified: false,
    confidence: null,
    route: r,
    gpu: { tokensIn: result.tokensIn, tokensOut: result.tokensOut, ms, energy: null },
    outputSha256: result.outputSha256,
  };
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
