/** The reference state: one token saved by this engine, whose layout every block of it shares. */
import { rm } from "node:fs/promises";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { readStateLayout, type StateLayout } from "./state-format.js";

/**
 * Saves a one-token state from `seq` (an exclusively held slot) to `path` and reads its layout;
 * the slot is left empty and the file removed.
 */
export async function referenceLayout(seq: LlamaContextSequence, path: string): Promise<StateLayout> {
  try {
    await seq.clearHistory();
    await seq.evaluateWithoutGeneratingNewTokens([(seq.model.tokens.bos ?? 0) as Token]);
    await seq.saveStateToFile(path);
    return await readStateLayout(path);
  } finally {
    await seq.clearHistory();
    await rm(path, { force: true });
  }
}
