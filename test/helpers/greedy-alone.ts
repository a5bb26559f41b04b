import type { LlamaContextSequence, Token } from "node-llama-cpp";

/**
 * Greedy tokens of `input` decoded alone by node-llama-cpp's own evaluation (not the batch loop)
 * in an emptied `sequence`, `n` of them; the sequence is emptied again after.
 */
export async function greedyAlone(
  sequence: LlamaContextSequence,
  input: Token[],
  n: number,
): Promise<Token[]> {
  await sequence.clearHistory();
  const out: Token[] = [];
  for await (const t of sequence.evaluate(input, { temperature: 0 })) {
    out.push(t);
    if (out.length >= n) break;
  }
  await sequence.clearHistory();
  return out;
}
