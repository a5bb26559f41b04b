/**
 * The flywheel experiment's controls (tools/eval/flywheel-eval.ts step 5):
 *  - a block for a trained family the model already solves: the plain solve (k = 1) against a
 *    forced graft of a sibling's block, on new numbers (gain or harm);
 *  - one prefix holding every deposited solution (the GPU node's deposit route on their block
 *    texts joined) grafted for each new-number instance, against one block per problem;
 *  - a deposit whose program hard-codes one of its numbers (right on its own numbers, so the
 *    deposit check passes), then a new-number instance through POST /v1/solve: is it transferred?
 */
import type { Family } from "../families/index.js";
import { formatNumber, type Instance } from "../families/render.js";
import { blockTextOf } from "../model/transcripts.js";
import { askV1, depositReference, forcedGraft, type V1Answer } from "./flywheel-eval.js";
import { drawInstance, trainedFamilies } from "./instances.js";
import { solveOnce } from "./solve-eval.js";
import type { EvalStack } from "./stack.js";

/** How many trained families the known-family control uses. */
const TRAINED_CONTROL_FAMILIES = 4;
/** How many deposited families the hard-coded-constant control uses. */
const HARD_CODED_FAMILIES = 2;

export interface ControlsInput {
  deposited: {
    family: Family;
    instance: Instance;
    variant: Instance;
    block: string | null;
    /** The per-problem forced graft's result on `variant`. */
    graftRight: boolean;
  }[];
  seed: string;
  graftTokens: number;
  log: (line: string) => void;
}

export interface ControlsResult {
  trainedBlock: { n: number; plainCorrect: number; graftCorrect: number; gained: number; harmed: number };
  mergedPrefix: { n: number; correct: number; tokensOut: number; prefixTokens: number };
  perProblemBlock: { n: number; correct: number };
  hardCodedConstant: {
    n: number;
    transferred: number;
    correct: number;
    refused: string[];
    wrongVerified: number;
    answers: (V1Answer & { family: string; expected: string })[];
  };
  /** Wrong `verified: true` answers among the controls' /v1/solve calls. */
  wrongVerified: number;
}

/** `instance`'s program with its last number written in as a constant instead of read from PARAMS. */
export function hardCodeLastParam(instance: Instance): string {
  const order = instance.order;
  const last = order.at(-1) as string;
  const rest = order.slice(0, -1);
  const unpack =
    rest.length === 1 ? `${rest[0]} = PARAMS[0]` : `${rest.join(", ")} = PARAMS[:${rest.length}]`;
  const body = instance.program.split("\n").slice(1).join("\n");
  return `${unpack}\n${last} = ${formatNumber(instance.params[last] as number)}\n${body}`;
}

/** Runs the controls (see the module comment). */
export async function runControls(stack: EvalStack, input: ControlsInput): Promise<ControlsResult> {
  const { log, seed } = input;
  const trained = { n: 0, plainCorrect: 0, graftCorrect: 0, gained: 0, harmed: 0 };
  for (const family of trainedFamilies().slice(0, TRAINED_CONTROL_FAMILIES)) {
    const sibling = drawInstance(family, 0, `${seed}/control-sibling`);
    const query = drawInstance(family, 0, `${seed}/control-query`);
    const block = await stack.gpu.deposit(blockTextOf(family.method, sibling));
    const plain = await solveOnce(stack.gpu, query, 1, 7, 0.7);
    const graft = await forcedGraft(stack.gpu, block.sha256, query, input.graftTokens);
    trained.n++;
    if (plain.right) trained.plainCorrect++;
    if (graft.right) trained.graftCorrect++;
    if (graft.right && !plain.right) trained.gained++;
    if (plain.right && !graft.right) trained.harmed++;
    log(`  trained ${family.id}: plain ${plain.answer}, graft ${graft.answer}, expected ${query.answer}`);
  }

  const withBlocks = input.deposited.filter((d) => d.block !== null);
  const merged = { n: 0, correct: 0, tokensOut: 0, prefixTokens: 0 };
  if (withBlocks.length > 0) {
    const text = withBlocks.map((d) => blockTextOf(d.family.method, d.instance)).join("\n");
    const block = await stack.gpu.deposit(text);
    merged.prefixTokens = block.tokenCount;
    for (const d of withBlocks) {
      const g = await forcedGraft(stack.gpu, block.sha256, d.variant, input.graftTokens);
      merged.n++;
      merged.tokensOut += g.tokensOut;
      if (g.right) merged.correct++;
    }
    log(`  merged prefix (${block.tokenCount} tokens): ${merged.correct}/${merged.n}`);
  }

  const hard: ControlsResult["hardCodedConstant"] = {
    n: 0,
    transferred: 0,
    correct: 0,
    refused: [],
    wrongVerified: 0,
    answers: [],
  };
  const candidates = input.deposited.filter((d) => d.family.params.length >= 2);
  for (const d of candidates.slice(0, HARD_CODED_FAMILIES)) {
    const phrasing = d.family.phrasings.length - 1;
    const cached = drawInstance(d.family, phrasing, `${seed}/hard-coded`);
    const query = drawInstance(d.family, phrasing, `${seed}/hard-coded-query`);
    await depositReference(stack, d.family, cached, hardCodeLastParam(cached));
    const a = await askV1(stack, query.problem, query.answer);
    hard.n++;
    if (a.source === "transfer") hard.transferred++;
    if (a.right) hard.correct++;
    if (a.transferRefused) hard.refused.push(a.transferRefused);
    if (a.verified && !a.right) hard.wrongVerified++;
    hard.answers.push({ ...a, family: d.family.id, expected: query.answer });
    log(
      `  hard-coded ${d.family.id}: ${a.source} ${a.answer} (expected ${query.answer}; refused ${a.transferRefused})`,
    );
  }
  return {
    trainedBlock: trained,
    mergedPrefix: merged,
    perProblemBlock: { n: withBlocks.length, correct: withBlocks.filter((d) => d.graftRight).length },
    hardCodedConstant: hard,
    wrongVerified: hard.wrongVerified,
  };
}
