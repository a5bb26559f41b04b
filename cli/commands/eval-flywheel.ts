/** `kvgraft eval flywheel`: the reference experiment end to end (tools/eval/flywheel-eval.ts). */
import { resolve } from "node:path";
import { runFlywheelEval } from "../../tools/eval/flywheel-eval.js";
import { EMBEDDED_MODEL_PATH } from "../../tools/eval/stack.js";
import { intFlag, parseFlags, printJson, requireGgufFile } from "../args.js";

const HELP = `usage: kvgraft eval flywheel [--model F.gguf] [--families N] [--samples K] [--seed S]
                             [--graft-tokens T] [--json]

Starts a GPU node (default the embedded model) and an edge in-process on loopback with a fresh
libSQL file and an empty library, then on the held-out families (the first N; default all 16):
baseline (k = 1 on the node's solve route, best-of-K through POST /v1/solve), deposit (the
flywheel worker first, then an operator's POST /admin/solutions with the reference program),
replay, transfer, forced graft and re-worded instances, and controls (a trained family's block,
one merged prefix, a program with a hard-coded constant). Progress on stderr. Exit 1 when any
answer is verified and wrong.
JSON (last line): {baseline, bestOfK, deposit, replay, transfer, graft, reworded, controls,
wrongVerified, tokensPerRightAnswer, model, families, ...}.`;

/** `kvgraft eval flywheel`. */
export default async function evalFlywheel(argv: string[]): Promise<number> {
  const flags = parseFlags(argv, {
    model: { type: "string" },
    families: { type: "string" },
    samples: { type: "string" },
    seed: { type: "string" },
    "graft-tokens": { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  });
  if (flags.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const modelPath = flags.model
    ? requireGgufFile(resolve(flags.model), "--model")
    : requireGgufFile(EMBEDDED_MODEL_PATH, "the embedded model");
  const r = await runFlywheelEval({
    modelPath,
    ...(flags.families === undefined ? {} : { families: intFlag(flags.families, "families", 16) }),
    samples: intFlag(flags.samples, "samples", 4),
    seed: flags.seed ?? "0",
    graftTokens: intFlag(flags["graft-tokens"], "graft-tokens", 256),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  const out = flags.json ? process.stderr : process.stdout;
  out.write(
    `baseline k=1 ${r.baseline.correct}/${r.baseline.n} (${r.baseline.tokensOut} tokens); ` +
      `best-of-${r.settings.samples} ${r.bestOfK.correct}/${r.bestOfK.n} (${r.bestOfK.tokensOut} tokens); ` +
      `deposited ${r.deposit.n} (flywheel ${r.deposit.fromFlywheel}, operator ${r.deposit.fromOperator}); ` +
      `replay ${r.replay.correct}/${r.replay.n} (${r.replay.gpuTokens} GPU tokens); ` +
      `transfer ${r.transfer.correct}/${r.transfer.n}; graft ${r.graft.correct}/${r.graft.n} (${r.graft.tokensPerAnswer} tokens per answer); ` +
      `reworded ${r.reworded.correct}/${r.reworded.n}; merged prefix ${r.controls.mergedPrefix.correct}/${r.controls.mergedPrefix.n}; ` +
      `wrong verified ${r.wrongVerified}\n`,
  );
  if (flags.json) printJson(r);
  return r.wrongVerified === 0 ? 0 : 1;
}
