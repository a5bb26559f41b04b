/**
 * The committed embedded model (models/kvgraft-math.gguf) through llama.cpp against PyTorch's
 * reference outputs committed beside it (tools/model/train.py computed them from the same f16
 * weights right after training): on every reference prompt the most likely next token is the same,
 * and each of PyTorch's ten most likely tokens has a probability within PROBABILITY_TOLERANCE of
 * llama.cpp's. Prompts are cut both inside trained targets (near-certain next tokens) and inside
 * prose that was never a target (spread distributions, where a wrong layout would show).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { getLlama, type Llama, type LlamaContext, type LlamaModel, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { EMBEDDED_MODEL } from "../tools/model/spec.js";

/**
 * llama.cpp on the CPU multiplies f16 weights with f16-rounded activations; PyTorch's reference is
 * f32 throughout. Largest difference seen on the reference prompts: 6.3e-4 (2026-12-01, the retrained model).
 */
const PROBABILITY_TOLERANCE = 2e-3;

const referenceSchema = z.object({
  prompts: z
    .array(
      z.object({
        name: z.string(),
        tokens: z.array(z.number().int()),
        top: z.array(z.tuple([z.number().int(), z.number()])),
      }),
    )
    .min(8),
});
const root = join(import.meta.dirname, "..");
const reference = referenceSchema.parse(
  JSON.parse(readFileSync(join(root, "models", "kvgraft-math.reference.json"), "utf8")),
);

let llama: Llama;
let model: LlamaModel;
let context: LlamaContext;

beforeAll(async () => {
  llama = await getLlama({ gpu: false });
  model = await llama.loadModel({ modelPath: join(root, EMBEDDED_MODEL) });
  context = await model.createContext({ contextSize: 1024, threads: 1 });
});
afterAll(async () => {
  await context?.dispose();
  await model?.dispose();
});

/** llama.cpp's next-token probabilities after `tokens`, on a fresh sequence (an end-of-turn token included). */
async function nextTokenProbabilities(tokens: readonly number[]): Promise<Map<Token, number>> {
  const seq = context.getSequence();
  try {
    const ids = tokens as Token[];
    const last = ids.at(-1) as Token;
    const results = await seq.controlledEvaluate([
      ...ids.slice(0, -1),
      [last, { generateNext: { probabilities: true } }],
    ]);
    const probabilities = results.at(-1)?.next?.probabilities;
    if (!probabilities) throw new Error("no probabilities for the last token");
    return probabilities;
  } finally {
    seq.dispose();
  }
}

describe("the embedded model: llama.cpp matches PyTorch", () => {
  it.each(reference.prompts.map((p) => [p.name, p] as const))("%s", async (_, prompt) => {
    const probs = await nextTokenProbabilities(prompt.tokens);
    const top1 = [...probs].reduce((best, entry) => (entry[1] > best[1] ? entry : best));
    expect(top1[0]).toBe(prompt.top[0]?.[0]);
    for (const [token, p] of prompt.top)
      expect(Math.abs((probs.get(token as Token) ?? 0) - p), `token ${token}`).toBeLessThanOrEqual(
        PROBABILITY_TOLERANCE,
      );
  });
});
