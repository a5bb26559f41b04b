/** Saving and restoring sequence state, with the fingerprint check that keeps foreign states out. */
import { withLock } from "lifecycle-utils";
import type { LlamaContext, LlamaContextSequence } from "node-llama-cpp";
import { conflict } from "../errors.js";
import type { Engine } from "./engine.js";

/** The fingerprints a saved state was made under. */
export interface StateOrigin {
  modelSha256: string;
  engineId: string;
}

/** Opt-in to load a state whose engine fingerprint differs; the caller must then check a probe hash. */
export interface AcceptMismatch {
  acceptEngineMismatch: true;
}

/** Throws a 409 `fingerprint_mismatch` unless the state was made by this model and engine configuration. */
export function assertSameOrigin(engine: Engine, origin: StateOrigin, accept?: AcceptMismatch): void {
  if (origin.modelSha256 !== engine.modelFingerprint.sha256)
    // A different model is never loadable: llama.cpp may crash on a foreign state.
    throw conflict("model_mismatch", "the state was made with a different model file", {
      expected: engine.modelFingerprint.sha256,
      got: origin.modelSha256,
    });
  if (origin.engineId !== engine.engineFingerprint.id && !accept?.acceptEngineMismatch)
    throw conflict(
      "engine_mismatch",
      "the state was made under a different engine or context configuration",
      {
        expected: engine.engineFingerprint.id,
        got: origin.engineId,
      },
    );
}

/** Current origin of states this engine saves. */
export function engineOrigin(engine: Engine): StateOrigin {
  return { modelSha256: engine.modelFingerprint.sha256, engineId: engine.engineFingerprint.id };
}

/**
 * Loads a state file into a sequence at the positions it was saved from. On any error the
 * sequence is wiped completely, because a failed load can leave cells behind (see wipeSequence).
 */
export async function loadSequenceState(sequence: LlamaContextSequence, path: string): Promise<void> {
  try {
    await sequence.clearHistory();
    await sequence.loadStateFromFile(path, { acceptRisk: true });
  } catch (err) {
    await wipeSequence(sequence).catch(() => false);
    throw err;
  }
}

/** The addon methods of node-llama-cpp 3.21.1 (pinned exactly) that reach every cell of a sequence; internal there. */
interface AddonContext {
  disposeSequence(sequenceId: number): void;
  getSequenceKvCacheMinPosition(sequenceId: number): number;
  getSequenceKvCacheMaxPosition(sequenceId: number): number;
}

/**
 * Removes the sequence's cells and says whether it is empty afterwards. `clearHistory()` alone
 * erases only [0, nextTokenIndex), and after a failed load that index is 0 while the load may
 * have left cells anywhere. This is llama.cpp's `seq_rm(seq, -1, -1)`, under node-llama-cpp's
 * own context lock so it never runs beside a batch decode. It still cannot reach a cell at a
 * negative position or at INT32_MAX (its range is [0, INT32_MAX)), which makes every later decode
 * in the slot fail: then it returns false and the caller must retire the slot.
 */
export async function wipeSequence(sequence: LlamaContextSequence): Promise<boolean> {
  await sequence.clearHistory();
  const context: LlamaContext = sequence.context;
  const addon = (context as unknown as { _ctx: AddonContext })._ctx;
  const id = (sequence as unknown as { _sequenceId: number })._sequenceId;
  return withLock([context, "context"], () => {
    addon.disposeSequence(id);
    return addon.getSequenceKvCacheMinPosition(id) === -1 && addon.getSequenceKvCacheMaxPosition(id) === -1;
  });
}
