/**
 * The wire contract of a sampled solve (POST /v1/solve on the GPU node): request, samples, energy
 * and result (the rest of the contract is in shared/protocol.ts).
 */
import { z } from "zod";
import { LIMITS, sandboxRunResultSchema, sha256Schema } from "./protocol.js";

/**
 * A sampled solve: k samples, each reasoning through the chat template and then answering with a
 * JSON-schema-constrained {answer, program}; the programs run in the sandbox and the answers vote.
 * `maxTokens` is the output budget of the whole solve, shared by its samples.
 */
export const solveRequestSchema = z
  .object({
    problem: z.string().min(1).max(LIMITS.queryChars),
    samples: z.number().int().min(1).max(32).default(4),
    maxTokens: z
      .number()
      .int()
      .min(1)
      .max(8 * LIMITS.maxTokens)
      .default(1024),
    /** > 0: the samples must differ; sample i uses seed `seed + i`. */
    temperature: z.number().gt(0).max(2).default(0.7),
    seed: z
      .number()
      .int()
      .nonnegative()
      .max(2 ** 31)
      .default(0),
    /** Below this agreement share the answer is unsure. */
    minConfidence: z.number().min(0).max(1).default(0.6),
    /** Server-sent events: every sample's tokens as they come, then one `solved` (or `error`). */
    stream: z.boolean().default(false),
    /**
     * `background` (the flywheel's solves): the node runs it only while no other model work is
     * active, and stops and reruns it when some arrives (its samples are seeded, so the answer is
     * the same); JSON only, since streamed tokens cannot be taken back.
     */
    priority: z.enum(["interactive", "background"]).default("interactive"),
  })
  .strict()
  .refine((r) => !(r.stream && r.priority === "background"), {
    message: "a background solve cannot stream",
    path: ["priority"],
  });
export type SolveRequest = z.input<typeof solveRequestSchema>;

export const solveSampleSchema = z.object({
  seed: z.number().int(),
  reasoning: z.string(),
  /** The constrained final part as generated (closed by the solver when the budget cut it). */
  final: z.string(),
  /** Stated answer and program; null when the budget left no room for the final part. */
  answer: z.string().nullable(),
  program: z.string().nullable(),
  /** True when the budget cut the final part and the solver closed its JSON. */
  truncated: z.boolean(),
  run: z
    .object({
      verdict: sandboxRunResultSchema.shape.verdict,
      answer: z.string().nullable(),
      stderr: z.string(),
      wallMs: z.number(),
    })
    .nullable(),
  tokensIn: z.number().int(),
  tokensOut: z.number().int(),
});
export type SolveSample = z.infer<typeof solveSampleSchema>;

/**
 * A solve's GPU energy: `nvidia-smi` power draw sampled every `intervalMs` from the moment the
 * solve holds its slot to the end of its last program run, integrated over time (trapezoids). It
 * is the whole GPU's draw: other work on the GPU in that window is included.
 */
export const energySchema = z.object({
  wh: z.number(),
  joules: z.number(),
  meanWatts: z.number(),
  samples: z.number().int(),
  intervalMs: z.number(),
});
export type Energy = z.infer<typeof energySchema>;

export const solveResultSchema = z.object({
  /** Majority over program outputs and stated answers; null when nothing answered. */
  answer: z.string().nullable(),
  /** Votes for the answer over all possible votes (two per sample). */
  confidence: z.number().min(0).max(1),
  /** Low confidence, no answer, or programs printing different answers. */
  unsure: z.boolean(),
  programsAgree: z.boolean(),
  votes: z.array(z.object({ answer: z.string(), stated: z.number().int(), programs: z.number().int() })),
  samples: z.array(solveSampleSchema),
  tokensIn: z.number().int(),
  tokensOut: z.number().int(),
  /** Time the model spent generating (all samples). */
  gpuMs: z.number(),
  /** Wall time of the program runs, summed (they overlap with generation). */
  sandboxMs: z.number(),
  totalMs: z.number(),
  /** Null without an NVIDIA GPU (`nvidia-smi` does not answer). */
  energy: energySchema.nullable(),
  /** SHA-256 of the samples' generated text (reasoning and final part, in order). */
  outputSha256: sha256Schema,
  isolation: z.string(),
});
export type SolveResult = z.infer<typeof solveResultSchema>;
