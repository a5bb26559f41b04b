/**
 * The fields of an imported block's manifest that its state file does not prove: each is
 * checked against what this node computes itself, and the import is refused, naming the field,
 * when they differ, so nothing is stored as given. (The file's SHA-256, size and chunk hashes are
 * computed when it is stored; its token count and token ids are checked by state-format.ts; its
 * probe hash by a decode step in a slot.)
 */
import type { Token } from "node-llama-cpp";
import { sha256Hex } from "../../../shared/hash.js";
import type { BlockManifest } from "../../../shared/protocol.js";
import type { Engine } from "../../engine/engine.js";
import { canonicalJson } from "../../engine/fingerprint.js";
import { probeTokenFor } from "../../engine/probe.js";
import { conflict, unprocessable } from "../../errors.js";

/** How far ahead of this node's clock a manifest's `createdAt` may be. */
const MAX_FUTURE_MS = 5 * 60_000;

/** The first path at which `got` differs from `expected` (`context.batchSize`, say), or null. */
function firstDifference(expected: unknown, got: unknown, path: string): string | null {
  if (typeof expected === "object" && expected !== null && typeof got === "object" && got !== null) {
    const keys = new Set([...Object.keys(expected), ...Object.keys(got)]);
    for (const key of [...keys].sort()) {
      const diff = firstDifference(
        (expected as Record<string, unknown>)[key],
        (got as Record<string, unknown>)[key],
        `${path}.${key}`,
      );
      if (diff) return diff;
    }
    return null;
  }
  return canonicalJson(expected) === canonicalJson(got) ? null : path;
}

/**
 * The model and engine fingerprints must be this node's own, field by field (the engine's id is
 * a hash of its fields, but the fields are stored too, so each is compared): 409 `model_mismatch`
 * or `engine_mismatch` with `details.field` otherwise.
 */
export function checkOrigin(engine: Engine, manifest: BlockManifest): void {
  for (const [part, own, code] of [
    ["model", engine.modelFingerprint, "model_mismatch"],
    ["engine", engine.engineFingerprint, "engine_mismatch"],
  ] as const) {
    const field = firstDifference(own, manifest[part], part);
    if (field)
      throw conflict(code, `the manifest's ${field} differs from this node's`, {
        field,
        expected: own,
        got: manifest[part],
      });
  }
}

/** A 422 `manifest_mismatch` naming the field. */
const mismatch = (field: string, message: string, details: Record<string, unknown>) =>
  unprocessable("manifest_mismatch", `manifest: ${field}: ${message}`, { field, ...details });

/**
 * The fields checked against the state's tokens and this node's clock: `textSha256` must be the
 * SHA-256 of the text the tokens spell (the model's detokenization, or that without the one
 * leading space a SentencePiece tokenizer's word prefix adds), `probe.token` the one derived from
 * the tokens' hash (engine/probe.ts), and `createdAt` an ISO 8601 time not in the future.
 */
export async function checkDerivedFields(
  engine: Engine,
  manifest: BlockManifest,
  tokens: readonly number[],
  now = Date.now(),
): Promise<void> {
  const spelled = engine.model.detokenize(tokens as Token[]);
  const candidates = spelled.startsWith(" ") ? [spelled, spelled.slice(1)] : [spelled];
  const hashes = await Promise.all(candidates.map((t) => sha256Hex(t)));
  if (!hashes.includes(manifest.textSha256))
    throw mismatch("textSha256", "is not the SHA-256 of the text the state's tokens spell", {
      expected: hashes,
      got: manifest.textSha256,
    });
  const probe = probeTokenFor(manifest.tokensSha256, engine.vocabSize);
  if (manifest.probe.token !== probe)
    throw mismatch("probe.token", "is not the probe token of these tokens", {
      expected: probe,
      got: manifest.probe.token,
    });
  const created = Date.parse(manifest.createdAt);
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(manifest.createdAt) || Number.isNaN(created))
    throw mismatch("createdAt", "is not an ISO 8601 UTC time", { got: manifest.createdAt });
  if (created > now + MAX_FUTURE_MS)
    throw mismatch("createdAt", "is in the future", {
      got: manifest.createdAt,
      now: new Date(now).toISOString(),
    });
}
