/**
 * The graft proof with every trial in a new context, so that both slots start empty (`kvgraft
 * verify` reuses its two slots across trials). A restore's exactness must not depend on what a
 * slot held before; this covers the other half. Prints one line per length; exit 1 on any difference.
 * Usage: KV_LLAMA=lastBuild npx tsx scripts/verify-fresh-slots.ts --model F.gguf --lengths 64,256
 *        [--trials 50] [--swa-full-cache true|false]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Token } from "node-llama-cpp";
import { intFlag, intListFlag, parseFlags, requireFlag } from "../cli/args.js";
import { readGpuEnv } from "../gpu-node/config.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { evaluateProbe, klDivergence } from "../gpu-node/engine/probe.js";
import { loadSequenceState } from "../gpu-node/engine/state.js";
import { randomTokens } from "../gpu-node/verify.js";
import { Xoshiro128 } from "../shared/random.js";

const flags = parseFlags(process.argv.slice(2), {
  model: { type: "string" },
  lengths: { type: "string" },
  trials: { type: "string" },
  "swa-full-cache": { type: "string", default: "false" },
});
const modelPath = requireFlag(flags.model, "model");
const trials = intFlag(flags.trials, "trials", 50);
const swaFullCache = flags["swa-full-cache"] === "true";
const env = readGpuEnv();
const dir = await mkdtemp(join(tmpdir(), "kvgraft-fresh-slots-"));
let allEqual = true;
try {
  for (const tokens of intListFlag(flags.lengths, "lengths", [64, 256, 300, 318, 1024, 4096])) {
    const rng = new Xoshiro128(`fresh-slots-${tokens}`);
    let equal = 0;
    let maxKl = 0;
    for (let i = 0; i < trials; i++) {
      const engine = await Engine.open({
        modelPath,
        slots: 2,
        contextSize: tokens + 1,
        swaFullCache,
        binary: env.KV_LLAMA,
        ...(env.KV_THREADS ? { threads: env.KV_THREADS } : {}),
      });
      try {
        const prefix = randomTokens(rng, tokens, engine.vocabSize);
        const [probe] = randomTokens(rng, 1, engine.vocabSize) as [Token];
        const file = join(dir, "trial.state");
        await engine.slot(0).evaluateWithoutGeneratingNewTokens(prefix);
        await engine.slot(0).saveStateToFile(file);
        const fresh = await evaluateProbe(engine.slot(0), probe, engine.vocabSize);
        await loadSequenceState(engine.slot(1), file);
        const graft = await evaluateProbe(engine.slot(1), probe, engine.vocabSize);
        if (fresh.sha256 === graft.sha256) equal++;
        maxKl = Math.max(maxKl, klDivergence(fresh.probabilities, graft.probabilities));
      } finally {
        await engine.dispose();
      }
    }
    allEqual &&= equal === trials;
    process.stdout.write(
      `${tokens} tokens, SWA full cache ${swaFullCache}, new context per trial: ${equal}/${trials} probability hashes equal, max KL ${maxKl}\n`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
process.exitCode = allEqual ? 0 : 1;
