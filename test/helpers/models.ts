/** Generated test models, written once per test run into a temp folder. */
import { existsSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveSpec } from "../../gpu-node/synth/presets.js";
import { writeSyntheticModel } from "../../gpu-node/synth/synth-model.js";

const dir = join(tmpdir(), "kvgraft-test-models");

/** Path of a generated model for the preset (and optional seed), creating it if needed. */
export function syntheticModel(preset: "tiny-llama" | "tiny-qwen3" | "tiny-gemma3", seed = "test"): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${preset}-${seed}.gguf`);
  if (!existsSync(path)) writeSyntheticModel(path, resolveSpec(preset, {}), seed);
  return path;
}
