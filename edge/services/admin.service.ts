/**
 * Admin operations behind /admin: depositing verified solutions (sandbox run, GPU deposit,
 * registration) and deleting blocks (upload grants and imported blocks: upload.service.ts). Plain
 * functions over the deps.
 */
import { badRequest, DomainError, notFound, unprocessable } from "../../shared/errors.js";
import { sha256Hex } from "../../shared/hash.js";
import { normalizeProblem, problemTemplate } from "../../shared/normalize.js";
import { MAX_LITERAL_CHARS, type ProgramParam } from "../../shared/params.js";
import type { BlockManifest, SandboxRunResult } from "../../shared/protocol.js";
import type { GpuPool } from "../cluster/gpu-pool.js";
import {
  addSolution,
  type Block,
  type BlockInput,
  findBlock,
  findVerifiedByFingerprint,
  newestReadyBlock,
  type Problem,
  registerBlock,
  registerProblem,
  type Solution,
  setBlockState,
  supersedeReadyBlocks,
  supersedeSolutions,
} from "../db/library.js";
import type { Deps } from "../http.js";
import { answerDomain } from "../routing/answer-domain.js";
import { isParametricProfile, profileProgram } from "../routing/param-probe.js";
import type { AdminSolutionRequest } from "../schemas.js";
import { BLOCK_TEXT_VERSION, renderBlockText } from "./block-text.js";

/** What the admin operations need (the embedded default calls them in-process with these). */
export type AdminDeps = Pick<Deps, "db" | "gpu" | "config" | "clock">;

/**
 * What a deposit returns. `created`: a new solution was stored (a new problem, or a new version
 * that superseded `superseded`); false: the problem's current solution is returned as it is (the
 * same solution again, or a different one deposited with `replace: false`).
 */
export interface DepositOutcome {
  created: boolean;
  problem: Problem;
  solution: Solution;
  block: Block | null;
  /** The version the new solution replaced (now kept for audit only), else null. */
  superseded: Solution | null;
}

/** How a deposit treats a problem that already has a verified solution. */
export interface DepositOptions {
  /**
   * True (the admin API): a different solution becomes the problem's next version and supersedes
   * the current one. False (the starter library, the flywheel): the current solution stays.
   */
  replace?: boolean;
}

/** Whether a request carries the same solution as a stored one (nothing to version). */
function sameSolution(stored: Solution, input: AdminSolutionRequest): boolean {
  return (
    stored.program === input.program && stored.answer === input.answer && stored.worked === input.solution
  );
}

/**
 * Checks a program by running it in the GPU node's sandbox on the problem's own numbers: it must
 * print `answer` as its last line. Rejects with 422 `program_mismatch` (another answer),
 * `program_timeout` (wall-clock or CPU limit) or `program_error` (crash, memory or output limit);
 * when the node runs no programs, 501 `sandbox_unavailable` (permanent); when it cannot be
 * reached now, 503 `gpu_unavailable` with Retry-After: a solution is never accepted unchecked.
 */
export async function checkProgram(
  gpu: Pick<GpuPool, "runProgram">,
  input: { program: string; params: readonly ProgramParam[]; answer: string },
): Promise<SandboxRunResult> {
  let run: SandboxRunResult;
  try {
    run = await gpu.runProgram({ program: input.program, params: input.params, expect: input.answer });
  } catch (err) {
    if (err instanceof DomainError && err.code === "sandbox_unavailable")
      throw new DomainError(
        501,
        "sandbox_unavailable",
        "The program cannot be checked: the GPU node runs no programs; nothing was stored.",
        { cause: err.code },
      );
    if (err instanceof DomainError && (err.status >= 500 || err.status === 404))
      throw new DomainError(
        503,
        "gpu_unavailable",
        "The program cannot be checked now (the GPU node's sandbox cannot be reached); nothing was stored.",
        { cause: err.code },
        err.retryAfterS ?? 5,
      );
    throw err;
  }
  const details = {
    verdict: run.verdict,
    expected: input.answer,
    got: run.answer,
    ...(run.stderr ? { stderr: run.stderr.slice(-2000) } : {}),
  };
  switch (run.verdict) {
    case "ok":
      return run;
    case "wrong_answer":
      throw unprocessable("program_mismatch", "The program's output differs from the given answer.", details);
    case "timeout":
      throw unprocessable("program_timeout", "The program ran past the sandbox's time limit.", details);
    default:
      throw unprocessable("program_error", "The program failed in the sandbox.", details);
  }
}

/**
 * Adds a verified solution: normalize, check the program, deposit the block text on the GPU node,
 * then register problem, ready block and solution. The GPU work comes before any write, so a
 * failed check or deposit leaves the library unchanged.
 *
 * A problem that already has a verified solution: the same solution again is idempotent
 * (`created: false`), except that a problem left without a ready block (deleted, quarantined)
 * gets its block deposited again. A different solution with `replace` (the admin API) is checked
 * like a new one and becomes the next version: the old solution is marked superseded (kept for
 * audit, never answers again), its blocks are marked superseded and removed from the GPU nodes,
 * and the fast path, routing and transfer use the new one. Without `replace` it is ignored.
 *
 * Programs should compute from `PARAMS`; one that reads none of the problem's numbers (prints a
 * constant) is accepted as this one problem's answer only: `parametric: false`, so it is never
 * re-run on other numbers (see README, "Programs and parameters").
 */
export async function depositSolution(
  deps: AdminDeps,
  input: AdminSolutionRequest,
  options: DepositOptions = {},
): Promise<DepositOutcome> {
  const normalizedText = normalizeProblem(input.problem);
  const fingerprint = await sha256Hex(normalizedText);
  const existing = await findVerifiedByFingerprint(deps.db, fingerprint);
  if (existing && (sameSolution(existing.solution, input) || !options.replace)) {
    const block = await newestReadyBlock(deps.db, existing.problem.id);
    const current = { problem: existing.problem, solution: existing.solution, superseded: null };
    if (block || !sameSolution(existing.solution, input)) return { created: false, ...current, block };
    return { created: false, ...current, block: await depositBlock(deps, input, existing.problem.id) };
  }

  const { template, literals } = problemTemplate(normalizedText);
  if (literals.some((l) => l.length > MAX_LITERAL_CHARS))
    throw badRequest(
      "number_too_long",
      `A number of the problem is longer than ${MAX_LITERAL_CHARS} characters.`,
      {
        maxChars: MAX_LITERAL_CHARS,
      },
    );
  // The check and the probe runs go to the sandbox at once; the check's refusal comes first.
  const [checked, probed] = await Promise.allSettled([
    checkProgram(deps.gpu, { program: input.program, params: literals, answer: input.answer }),
    profileProgram(deps.gpu, input.program, literals, input.answer),
  ]);
  if (checked.status === "rejected") throw checked.reason;
  if (probed.status === "rejected") throw probed.reason;
  const run = checked.value;
  const { profile: paramProfile, runs } = probed.value;
  const placed = await placeBlockText(deps, renderBlockText(input));
  const manifest = placed.manifest;
  return registerOrRemove(deps, manifest.sha256, async () => {
    const { problem } = await registerProblem(deps.db, {
      normalizedText,
      fingerprint,
      template,
      params: literals,
    });
    const block = await registerBlock(deps.db, blockInput(manifest, problem.id, placed.nodeId));
    await deps.gpu.replicate(manifest.sha256, placed.nodeId);
    const solution = await addSolution(deps.db, {
      problemId: problem.id,
      worked: input.solution,
      program: input.program,
      answer: input.answer,
      parametric: isParametricProfile(paramProfile),
      verified: true,
      verification: {
        method: "sandbox",
        verdict: run.verdict,
        expected: input.answer,
        got: run.answer,
        params: literals,
        paramProfile,
        // What the verified answer is like, for refusing transfers outside it (edge/routing/answer-domain.ts).
        answerDomain: answerDomain(normalizedText, literals, input.answer, paramProfile, runs),
        isolation: run.isolation ?? null,
        wallMs: run.wallMs ?? null,
        blockSha256: manifest.sha256,
        blockTextVersion: BLOCK_TEXT_VERSION,
        checkedAt: new Date(deps.clock.now()).toISOString(),
      },
    });
    const superseded = existing
      ? await supersede(deps, existing.solution, solution.id, problem.id, manifest.sha256)
      : null;
    return { created: true, problem, solution, block, superseded };
  });
}

/**
 * Runs the registration of a block just placed on the GPU node. When it fails (a full or
 * read-only database, say), the block is removed from the node again unless the library has a
 * row for it (an earlier deposit of the same text, which the node shares), so a failed deposit
 * leaves no orphan; the registration's error is what the client is answered. A removal that
 * fails too (the node gone meanwhile) leaves the block: a later deposit of the same text adopts
 * it, and with two or more nodes the rebalancer drops blocks the library does not know.
 */
async function registerOrRemove<T>(deps: AdminDeps, sha256: string, register: () => Promise<T>): Promise<T> {
  try {
    return await register();
  } catch (err) {
    // A library that cannot be read cannot say the block is unknown: keep it.
    const known = await findBlock(deps.db, sha256).then(
      (row) => row !== null,
      () => true,
    );
    if (!known) await deps.gpu.deleteBlock(sha256).catch(() => undefined);
    throw err;
  }
}

/** Deposits block text on the GPU node (a pool: on one node) and checks the manifest is for it. */
async function placeBlockText(
  deps: AdminDeps,
  text: string,
): Promise<{ manifest: BlockManifest; nodeId: string }> {
  // A pool deposits on one node, then copies the block to its R nodes (edge/cluster/gpu-pool.ts).
  const placed = await deps.gpu.depositPlaced(text);
  const textSha256 = await sha256Hex(text);
  if (placed.manifest.textSha256 !== textSha256)
    throw new DomainError(502, "gpu_bad_response", "The GPU node's block manifest is for another text.", {
      expected: textSha256,
      got: placed.manifest.textSha256,
    });
  return placed;
}

/** Deposits the block of an already verified solution again and registers it ready. */
async function depositBlock(deps: AdminDeps, input: AdminSolutionRequest, problemId: string): Promise<Block> {
  const placed = await placeBlockText(deps, renderBlockText(input));
  return registerOrRemove(deps, placed.manifest.sha256, async () => {
    const block = await registerBlock(deps.db, blockInput(placed.manifest, problemId, placed.nodeId));
    await deps.gpu.replicate(placed.manifest.sha256, placed.nodeId);
    return block;
  });
}

/**
 * Retires the solution a new version replaced: marks it (and any other not yet superseded)
 * superseded, marks the problem's other ready blocks superseded (their text holds the old solution,
 * so a graft must never use them) and removes them from the GPU nodes. A node that cannot be
 * reached now keeps its copy, which the library never routes to (with two or more nodes, the
 * rebalancer removes it later). Returns the replaced current solution.
 */
async function supersede(
  deps: AdminDeps,
  old: Solution,
  by: string,
  problemId: string,
  keepBlock: string,
): Promise<Solution | null> {
  const replaced = await supersedeSolutions(deps.db, { problemId, by, at: new Date(deps.clock.now()) });
  const stale = await supersedeReadyBlocks(deps.db, problemId, keepBlock);
  for (const sha256 of stale) await deps.gpu.deleteBlock(sha256).catch(() => undefined);
  return replaced.find((s) => s.id === old.id) ?? null;
}

/** The block row for a manifest; fingerprints are the model file's SHA-256 and the engine id. */
export function blockInput(manifest: BlockManifest, problemId: string, nodeId: string): BlockInput {
  return {
    sha256: manifest.sha256,
    problemId,
    manifest: {
      ...manifest,
      modelFingerprint: manifest.model.sha256,
      engineFingerprint: manifest.engine.id,
    },
    state: "ready",
    nodeId,
  };
}

/**
 * Deletes a block: from the GPU node (already gone there is fine), then marks it quarantined in
 * the library so routing never picks it again. 404 `block_not_found` for an unknown block.
 */
export async function deleteBlock(deps: AdminDeps, sha256: string): Promise<Block> {
  const row = await findBlock(deps.db, sha256);
  if (!row) throw notFound("block_not_found", "No block with this SHA-256.");
  try {
    await deps.gpu.deleteBlock(sha256);
  } catch (err) {
    if (!(err instanceof DomainError && err.status === 404)) throw err;
  }
  return setBlockState(deps.db, sha256, "quarantined");
}
