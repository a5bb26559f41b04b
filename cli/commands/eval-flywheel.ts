/** `kvgraft eval flywheel`: the reference experiment end to end (tools/eval/flywheel-eval.ts). */
import { runFlywheelEval } from "../../tools/eval/flywheel-eval.js";
import { intFlag } from "../args.js";
import { command, modelOrEmbedded } from "../command.js";
import { inheritedEnv } from "../config.js";

const HELP = `usage: kvgraft eval flywheel [--model F.gguf] [--families N] [--samples K] [--seed S]
                             [--graft-tokens T] [--json]

Starts a GPU node (default the embedded model) and an edge in-process on loopback with a fresh
libSQL file and an empty library, then on the held-out families (the first N; default all 16):
baseline (k = 1 on the node's solve route, best-of-K through POST /v1/solve), deposit (the
flywheel worker first, then an operator's POST /admin/solutions with the reference program),
replay, transfer, forced graft and re-worded instances, and controls (a trained family's block,
one merged prefix, a program with a hard-coded constant). Each answer of the first four steps is
timed and, where nvidia-smi answers, charged the GPU's energy over its span (perAnswer). The GPU
node reads its own variables (KV_LLAMA, KV_THREADS, KVGRAFT_SANDBOX, ...) from the environment.
Progress on stderr. Exit 1 when any answer is verified and wrong.
JSON (last line): {baseline, bestOfK, deposit, replay, transfer, graft, reworded, controls,
wrongVerified, tokensPerRightAnswer, perAnswer, gpuPower, model, families, ...}.`;

/** `kvgraft eval flywheel`. */
export default command(
  {
    help: HELP,
    flags: {
      model: { type: "string" },
      families: { type: "string" },
      samples: { type: "string" },
      seed: { type: "string" },
      "graft-tokens": { type: "string" },
    },
  },
  async (flags, out) => {
    const modelPath = modelOrEmbedded(flags.model);
    const r = await runFlywheelEval({
      modelPath,
      ...(flags.families === undefined ? {} : { families: intFlag(flags.families, "families", 16) }),
      samples: intFlag(flags.samples, "samples", 4),
      seed: flags.seed ?? "0",
      graftTokens: intFlag(flags["graft-tokens"], "graft-tokens", 256),
      log: out.progress,
      gpuEnv: inheritedEnv(),
    });
    out.say(
      `baseline k=1 ${r.baseline.correct}/${r.baseline.n} (${r.baseline.tokensOut} tokens); ` +
        `best-of-${r.settings.samples} ${r.bestOfK.correct}/${r.bestOfK.n} (${r.bestOfK.tokensOut} tokens); ` +
        `deposited ${r.deposit.n} (flywheel ${r.deposit.fromFlywheel}, operator ${r.deposit.fromOperator}); ` +
        `replay ${r.replay.correct}/${r.replay.n} (${r.replay.gpuTokens} GPU tokens); ` +
        `transfer ${r.transfer.correct}/${r.transfer.n}; graft ${r.graft.correct}/${r.graft.n} (${r.graft.tokensPerAnswer} tokens per answer); ` +
        `reworded ${r.reworded.correct}/${r.reworded.n}; merged prefix ${r.controls.mergedPrefix.correct}/${r.controls.mergedPrefix.n}; ` +
        `wrong verified ${r.wrongVerified}`,
    );
    const energy = (p: keyof typeof r.perAnswer) => {
      const c = r.perAnswer[p];
      return `${p} ${c.msPerAnswer} ms${c.joulesPerAnswer === null ? "" : ` ${c.joulesPerAnswer} J`}`;
    };
    out.say(`per answer: ${(["bestOfK", "replay", "transfer", "graft"] as const).map(energy).join("; ")}`);
    out.result(r);
    return r.wrongVerified === 0 ? 0 : 1;
  },
);
