/**
 * The embedded model's training transcripts, in the product's exact formats, tokenized by
 * llama.cpp itself (through node-llama-cpp and the model's own vocabulary), so training sees the
 * token ids inference will:
 * (a) a solve: the ChatML conversation LlamaChatSession builds (gpu-node/solve/solver.ts): the
 *     system prompt, the problem, brief reasoning, the final-part request with its limits and
 *     PARAMS, then the final JSON {answer, program};
 * (b) a graft: a verified sibling's block text (edge/services/block-text.ts, version 1), then the
 *     query as a graft appends it (shared/graft-prompt.ts), then the final JSON.
 * Each comes with the token ranges the loss is taken over (what the model itself writes).
 */
import {
  type ChatHistoryItem,
  ChatMLChatWrapper,
  type LlamaModel,
  LlamaText,
  type Token,
} from "node-llama-cpp";
import { renderBlockText } from "../../edge/services/block-text.js";
import { tokenizeWithBos } from "../../gpu-node/engine/engine.js";
import { finalPartPrompt, planSolve, SYSTEM_PROMPT } from "../../gpu-node/solve/solver.js";
import { renderFinalPart, renderGraftQuery } from "../../shared/graft-prompt.js";
import { formatNumber, type Instance } from "../families/render.js";

/** After the final JSON the solve's grammar requires four newlines (node-llama-cpp's JSON grammar). */
const GRAMMAR_TAIL = "\n\n\n\n";

/** A tokenized transcript and the [start, end) ranges of the tokens the model writes. */
export interface Tokenized {
  tokens: Token[];
  targets: [number, number][];
}

/** The brief reasoning a solve writes: the family's method, then the numbers by name. */
export function reasoningText(method: string, instance: Instance): string {
  const values = instance.order.map((name) => `${name} = ${formatNumber(instance.params[name] as number)}`);
  return `${method} Here ${values.join(", ")}.`;
}

/** The texts of a solve transcript for a budget of `maxTokens` over `samples` samples. */
export function solveTexts(method: string, instance: Instance, maxTokens: number, samples: number) {
  const plan = planSolve(maxTokens, samples);
  return {
    problem: instance.problem,
    reasoning: reasoningText(method, instance),
    finalPrompt: finalPartPrompt(plan.limits, instance.literals),
    final: renderFinalPart(instance.answer, instance.program),
    limits: plan.limits,
  };
}

/** The block text of a verified instance (what a deposit prefills). */
export function blockTextOf(method: string, instance: Instance): string {
  return renderBlockText({
    problem: instance.problem,
    solution: reasoningText(method, instance),
    program: instance.program,
    answer: instance.answer,
  });
}

/** Tokenizes solve transcripts the way LlamaChatSession lays them out for the ChatML template. */
export class TranscriptTokenizer {
  private readonly wrapper = new ChatMLChatWrapper();
  private readonly eos: Token;

  constructor(private readonly model: LlamaModel) {
    const eos = model.tokens.eos;
    if (eos === null) throw new Error("the model has no end-of-generation token");
    this.eos = eos;
  }

  private context(history: ChatHistoryItem[]): Token[] {
    return this.wrapper
      .generateContextState({ chatHistory: history })
      .contextText.tokenize(this.model.tokenizer);
  }

  /** A solve: loss on the reasoning with its end of turn, and on the final part with its end. */
  solve(texts: ReturnType<typeof solveTexts>): Tokenized {
    const system: ChatHistoryItem = { type: "system", text: LlamaText(SYSTEM_PROMPT).toJSON() };
    const user: ChatHistoryItem = { type: "user", text: texts.problem };
    const askReasoning = this.context([system, user, { type: "model", response: [] }]);
    const withReasoning = this.context([system, user, { type: "model", response: [texts.reasoning] }]);
    const askFinal = this.context([
      system,
      user,
      { type: "model", response: [texts.reasoning] },
      { type: "user", text: texts.finalPrompt },
      { type: "model", response: [] },
    ]);
    if (!startsWith(withReasoning, askReasoning) || !startsWith(askFinal, withReasoning))
      throw new Error("the chat layout's prefixes do not tokenize as prefixes");
    // The final part is generated right after "assistant\n": no SentencePiece space in front of it.
    const final = this.model.tokenize(texts.final + GRAMMAR_TAIL, false, "trimLeadingSpace");
    const tokens = [...askFinal, ...final, this.eos];
    // The reasoning's end of turn is the token after it (the template's "<|im_end|>").
    return {
      tokens,
      targets: [
        [askReasoning.length, withReasoning.length + 1],
        [askFinal.length, tokens.length],
      ],
    };
  }

  /** A graft: the block as a deposit tokenizes it, the query as a graft appends it, then the final part. */
  graft(blockText: string, instance: Instance): Tokenized {
    const block = tokenizeWithBos(this.model, blockText);
    const query = this.model.tokenize(renderGraftQuery(instance.problem, instance.literals));
    const prefix = [...block, ...query];
    const tokens = [
      ...prefix,
      ...this.model.tokenize(renderFinalPart(instance.answer, instance.program), false, "trimLeadingSpace"),
      this.eos,
    ];
    return { tokens, targets: [[prefix.length, tokens.length]] };
  }
}

function startsWith(tokens: readonly Token[], prefix: readonly Token[]): boolean {
  return prefix.length <= tokens.length && prefix.every((t, i) => tokens[i] === t);
}
