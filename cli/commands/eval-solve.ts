/** `kvgraft eval solve`: the plain model's accuracy through the GPU node's solve path (tools/eval/solve-eval.ts). */
import { runSolveEval } from "../../tools/eval/solve-eval.js";
import { intFlag, UsageError } from "../args.js";
import { command, modelOrEmbedded } from "../command.js";
import { inheritedEnv } from "../config.js";

export const SOLVE_HELP = `usage: kvgraft eval solve [--model F.gguf] [--per-family N] [--samples K] [--seed S]
                          [--temperature T] [--json]

Starts a GPU node in-process on the model (default the embedded one) and solves new instances
through its solve path (signed client; programs in its sandbox): (i) trained families on training
phrasings, (ii) trained families on their held-out phrasing ("held-in"), (iii) trained families on
the second held-out set (two phrasings each, written from the family's method and program alone),
(iv) held-out families;
each with 1 sample and best-of-K (default 4; right when the vote's answer is right), 256 output
tokens per sample, temperature T (default 0.7, the solve path's). The GPU node reads its own variables (KV_LLAMA, KV_THREADS, KVGRAFT_SANDBOX, ...)
from the environment. Progress on stderr.
JSON (last line): {heldIn: {n, correct}, heldInFresh: {n, correct}, heldOut: {n, correct},
model: {sha256, params}, conditions, detail, ...} (heldIn, heldInFresh and heldOut: k = 1).`;

/** `kvgraft eval solve`. */
export default command(
  {
    help: SOLVE_HELP,
    flags: {
      model: { type: "string" },
      "per-family": { type: "string" },
      samples: { type: "string" },
      seed: { type: "string" },
      temperature: { type: "string" },
    },
  },
  async (flags, out) => {
    const modelPath = modelOrEmbedded(flags.model);
    const temperature = flags.temperature === undefined ? 0.7 : Number(flags.temperature);
    if (!(temperature > 0 && temperature <= 2))
      throw new UsageError(
        `--temperature must be in (0, 2] (the solve path samples), got ${flags.temperature}`,
      );
    const result = await runSolveEval({
      modelPath,
      perFamily: intFlag(flags["per-family"], "per-family", 1),
      samples: intFlag(flags.samples, "samples", 4),
      seed: flags.seed ?? "0",
      temperature,
      log: out.progress,
      gpuEnv: inheritedEnv(),
    });
    const c = result.conditions;
    const line = (name: string, s: (typeof c)["heldOutFamily"]) =>
      `${name}: k=1 ${s.k1.correct}/${s.k1.n}, best-of-${result.settings.samples} ${s.bestOfK.correct}/${s.bestOfK.n}; ` +
      `${s.k1.tokensOutPerAnswer} / ${s.bestOfK.tokensOutPerAnswer} tokens, ${s.k1.msPerAnswer} / ${s.bestOfK.msPerAnswer} ms per answer`;
    out.say(line("trained families, training phrasings", c.trainedPhrasing));
    out.say(line("trained families, held-out phrasing", c.heldOutPhrasing));
    out.say(line("trained families, second held-out set", c.freshPhrasing));
    out.say(line("held-out families", c.heldOutFamily));
    out.result(result);
    return 0;
  },
);
