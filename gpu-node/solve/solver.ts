/**
 * The solve pipeline for problems no block answers: k samples on one leased slot, each through
 * the model's chat template (LlamaChatSession; a model without a template gets a general
 * wrapper): first free reasoning, then a final part constrained by a JSON schema to
 * {answer, program}. Each program runs in the sandbox (PARAMS = the problem's numbers) while the
 * next sample generates; the stated answers and program outputs vote (vote.ts). Reports tokens,
 * model time and, where `nvidia-smi` answers, energy from power sampling.
 */
import {
  type ChatWrapper,
  LlamaChatSession,
  type LlamaJsonSchemaGrammar,
  resolveChatWrapper,
  type Token,
} from "node-llama-cpp";
import type { z } from "zod";
import { type FinalLimits, finalSchema, parseFinal } from "../../shared/final-part.js";
import { sha256Hex } from "../../shared/hash.js";
import { problemTemplate } from "../../shared/normalize.js";
import { LIMITS } from "../../shared/protocol.js";
import type { SolveResult, SolveSample, solveRequestSchema } from "../../shared/solve-protocol.js";
import { tally } from "../../shared/vote.js";
import type { SlotPool } from "../blocks/slots/slot-pool.js";
import type { Engine } from "../engine/engine.js";
import { badRequest } from "../errors.js";
import type { ProgramJob, ProgramResult } from "../sandbox/sandbox.js";
import { type PowerReading, type PowerSampler, startPowerSampler } from "../telemetry/power.js";

export type SolveInput = z.output<typeof solveRequestSchema>;

/** What the solver needs of the sandbox (a SandboxPool fits). */
export interface ProgramRunner {
  readonly isolation: string;
  /** `signal` ends the wait for a sandbox slot (the solve's deadline). */
  runProgram(job: ProgramJob, signal?: AbortSignal): Promise<ProgramResult>;
}

/** Power sampling interval of the energy figure. */
export const POWER_INTERVAL_MS = 100;
/** Below this many tokens a sample has no room for a final part and only reasons. */
const MIN_SAMPLE_TOKENS = 48;
/** Prompt and chat-template tokens beyond the problem, for the context check. */
const TEMPLATE_MARGIN = 256;

/** The system prompt of every solve (the embedded model is trained on it: tools/model/transcripts.ts). */
export const SYSTEM_PROMPT =
  "You solve math problems. Think step by step and be brief. When asked for the final part, " +
  "reply with JSON only: the final answer as a short string, and a Python 3 program that " +
  "computes it. The problem's numbers, in order of appearance, are in the list PARAMS, which is " +
  "already defined: the program reads them from PARAMS and prints only the answer, on its last line.";

/** The user turn that asks for the final part, with its limits and the problem's numbers. */
export function finalPartPrompt(limits: FinalLimits, params: readonly string[]): string {
  return (
    `Now the final part, as JSON {"answer": ..., "program": ...}: the answer in at most ` +
    `${limits.answerChars} characters, the program in at most ${limits.programChars}. ` +
    `PARAMS = [${params.join(",")}].`
  );
}

/** How a solve's output budget is spent. */
export interface SolvePlan {
  samples: number;
  reasoningTokens: number;
  /** 0: no final part (the budget is too small for one). */
  finalTokens: number;
  limits: FinalLimits;
}

/** Splits the budget over the samples: half of each for reasoning, half for the final part. */
export function planSolve(maxTokens: number, samples: number): SolvePlan {
  const k = Math.max(1, Math.min(samples, Math.floor(maxTokens / MIN_SAMPLE_TOKENS)));
  const perSample = Math.floor(maxTokens / k);
  const finalTokens = perSample < MIN_SAMPLE_TOKENS ? 0 : Math.floor(perSample / 2);
  return {
    samples: k,
    reasoningTokens: perSample - finalTokens,
    finalTokens,
    limits: {
      answerChars: Math.min(200, Math.max(4, Math.floor(finalTokens / 8))),
      programChars: Math.min(LIMITS.programChars, Math.max(16, finalTokens * 4)),
    },
  };
}

export class Solver {
  private readonly grammars = new Map<
    string,
    Promise<LlamaJsonSchemaGrammar<ReturnType<typeof finalSchema>>>
  >();

  /**
   * The model's chat wrapper, resolved once: LlamaChatSession's "auto" resolves it again for every
   * session (renders the GGUF's Jinja template against test chats), ~0.9 s a sample on 2 cores.
   */
  private readonly chatWrapper: ChatWrapper;

  constructor(
    private readonly engine: Engine,
    private readonly pool: SlotPool,
    private readonly sandbox: ProgramRunner,
  ) {
    this.chatWrapper = resolveChatWrapper(engine.model);
  }

  /** Runs the pipeline (see the module comment); `onToken` sees every sample's tokens as they come. */
  async solve(
    req: SolveInput,
    signal?: AbortSignal,
    onToken?: (token: number, text: string) => void,
  ): Promise<SolveResult> {
    const started = performance.now();
    const plan = planSolve(req.maxTokens, req.samples);
    // Exact literals: a 400-digit number reaches the program as a Python int, not a float or null.
    const { literals: params } = problemTemplate(req.problem);
    const finalPrompt = finalPartPrompt(plan.limits, params);
    const promptTokens = this.engine.tokenize(`${SYSTEM_PROMPT}\n${req.problem}\n${finalPrompt}`).length;
    const needed = promptTokens + plan.reasoningTokens + plan.finalTokens + TEMPLATE_MARGIN;
    if (needed > this.engine.options.contextSize)
      throw badRequest(
        "context_overflow",
        `a sample needs about ${needed} tokens (prompt, template and budget); a slot holds ${this.engine.options.contextSize}`,
      );
    const grammar = plan.finalTokens > 0 ? await this.grammar(plan.limits) : null;
    const samples: SolveSample[] = [];
    const runs: Promise<SolveSample["run"]>[] = [];
    let gpuMs = 0;
    let power: PowerSampler | null = null;
    let reading: PowerReading | null = null;
    try {
      const lease = await this.pool.acquire(null, signal);
      // Energy of this solve's own work: sampled from holding the slot to the last program.
      power = startPowerSampler(POWER_INTERVAL_MS);
      const seq = lease.slot.sequence;
      try {
        for (let i = 0; i < plan.samples; i++) {
          const seed = req.seed + i;
          await seq.clearHistory();
          const meter = seq.tokenMeter.getState();
          const session = new LlamaChatSession({
            contextSequence: seq,
            autoDisposeSequence: false,
            chatWrapper: this.chatWrapper,
            systemPrompt: SYSTEM_PROMPT,
          });
          const t0 = performance.now();
          let reasoning: string;
          let final = "";
          try {
            const options = {
              temperature: req.temperature,
              seed,
              ...(signal ? { signal } : {}),
              ...(onToken ? { onToken: this.tokenSink(onToken) } : {}),
            };
            reasoning = await session.prompt(req.problem, { ...options, maxTokens: plan.reasoningTokens });
            if (grammar)
              final = await session.prompt(finalPrompt, { ...options, maxTokens: plan.finalTokens, grammar });
          } finally {
            session.dispose({ disposeSequence: false });
          }
          gpuMs += performance.now() - t0;
          const used = seq.tokenMeter.diff(meter);
          const parsed = grammar ? parseFinal(final) : null;
          samples.push({
            seed,
            reasoning,
            final,
            answer: parsed ? parsed.answer : null,
            program: parsed ? parsed.program : null,
            truncated: parsed?.truncated ?? false,
            run: null,
            tokensIn: used.usedInputTokens,
            tokensOut: used.usedOutputTokens,
          });
          runs.push(this.run(parsed?.program ?? "", params, signal));
        }
      } finally {
        await seq.clearHistory().catch(() => undefined);
        lease.release(null);
      }
    } finally {
      // Let started programs finish (they are bounded by the sandbox's limits) before returning.
      await Promise.allSettled(runs);
      reading = power?.stop() ?? null;
    }
    (await Promise.all(runs)).forEach((run, i) => {
      (samples[i] as SolveSample).run = run;
    });
    const votes = tally(
      samples.map((s) => ({
        stated: s.answer,
        program: s.run?.verdict === "ok" ? s.run.answer : null,
      })),
      req.minConfidence,
    );
    return {
      answer: votes.answer,
      confidence: votes.confidence,
      unsure: votes.unsure,
      programsAgree: votes.programsAgree,
      votes: votes.votes,
      samples,
      tokensIn: samples.reduce((n, s) => n + s.tokensIn, 0),
      tokensOut: samples.reduce((n, s) => n + s.tokensOut, 0),
      gpuMs,
      sandboxMs: samples.reduce((n, s) => n + (s.run?.wallMs ?? 0), 0),
      totalMs: performance.now() - started,
      energy: reading
        ? {
            wh: reading.joules / 3600,
            joules: reading.joules,
            meanWatts: reading.meanWatts,
            samples: reading.samples,
            intervalMs: reading.intervalMs,
          }
        : null,
      outputSha256: await sha256Hex(JSON.stringify(samples.map((s) => [s.reasoning, s.final]))),
      isolation: this.sandbox.isolation,
    };
  }

  /** node-llama-cpp's token batches as one call per token with its text. */
  private tokenSink(onToken: (token: number, text: string) => void) {
    // Each token's text with the tokens before it, so a SentencePiece piece keeps its leading space.
    const before: Token[] = [];
    return (tokens: Token[]) => {
      for (const token of tokens) {
        onToken(token, this.engine.model.detokenize([token], false, before.slice(-4)));
        before.push(token);
      }
    };
  }

  /** Runs one program; an empty program is not run, and a refused one counts as an error. */
  private async run(
    program: string,
    params: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<SolveSample["run"]> {
    if (program.trim() === "") return null;
    try {
      const r = await this.sandbox.runProgram({ source: program, params }, signal);
      return { verdict: r.verdict, answer: r.answer, stderr: r.stderr.slice(-1000), wallMs: r.wallMs };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return { verdict: "error", answer: null, stderr: message.slice(-1000), wallMs: 0 };
    }
  }

  /** The grammar of the final part for these limits (cached). */
  private grammar(limits: FinalLimits) {
    const key = `${limits.answerChars}/${limits.programChars}`;
    let grammar = this.grammars.get(key);
    if (!grammar) {
      if (this.grammars.size >= 32) this.grammars.clear();
      grammar = this.engine.llama.createGrammarForJsonSchema(finalSchema(limits));
      grammar.catch(() => this.grammars.delete(key));
      this.grammars.set(key, grammar);
    }
    return grammar;
  }
}
