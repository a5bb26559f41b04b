/**
 * Batches that keep exact evaluations exact. node-llama-cpp puts the pending tokens of every slot
 * of a context into one llama.cpp batch, and llama.cpp's result for a sequence's token depends on
 * what shares its batch (attention spans the longest stream in the batch, and matrix products take
 * other paths for other batch shapes): a probe evaluated beside another slot's tokens hashes
 * differently from the same probe alone (tiny-llama on the CPU: test/exact-batching.test.ts). So
 * the evaluations whose results are compared with stored ones (deposits, probes, verification)
 * run at EXACT_PRIORITY, and such an evaluation is dispatched alone; the others wait one batch.
 */
import type { BatchItem, EvaluationPriority, PrioritizedBatchItem } from "node-llama-cpp";

/** The priority that marks an evaluation that must run alone in its batch. */
export const EXACT_PRIORITY: EvaluationPriority = 1;

/** Evaluation options for an exact evaluation. */
export const exactEvaluation = { evaluationPriority: EXACT_PRIORITY } as const;

/**
 * node-llama-cpp's batch prioritization: the first pending exact evaluation alone; otherwise an
 * equal share of the batch for each slot and what is left to the slots that have more (as its
 * default, `maximumParallelism`, does).
 */
export function exactFirstStrategy({
  items,
  size,
}: {
  items: readonly BatchItem[];
  size: number;
}): PrioritizedBatchItem[] {
  const exact = items.find((item) => item.evaluationPriority === EXACT_PRIORITY);
  if (exact) return [{ item: exact, processAmount: Math.min(exact.tokens.length, size) }];
  const share = Math.max(1, Math.floor(size / Math.max(1, items.length)));
  let free = size;
  const batch: PrioritizedBatchItem[] = [];
  for (const item of items) {
    const processAmount = Math.min(item.tokens.length, share, free);
    if (processAmount === 0) continue;
    batch.push({ item, processAmount });
    free -= processAmount;
  }
  for (const entry of batch) {
    const more = Math.min(entry.item.tokens.length - entry.processAmount, free);
    entry.processAmount += more;
    free -= more;
  }
  return batch;
}
