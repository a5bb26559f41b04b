/** Saving and restoring sequence state, with the fingerprint check that keeps foreign states out. */
import type { LlamaContextSequence } from "node-llama-cpp";
import { conflict } from "../../shared/errors.js";
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
 * sequence is cleared, because a failed load can leave partial cells behind.
 */
export async function loadSequenceState(sequence: LlamaContextSequence, path: string): Promise<void> {
  try {
    await sequence.clearHistory();
    await sequence.loadStateFromFile(path, { acceptRisk: true });
  } catch (err) {
    await sequence.clearHistory().catch(() => undefined);
    throw err;
  }
}
