import { Engine } from "../../gpu-node/engine/engine.js";
import { verifyGraft } from "../../gpu-node/verify.js";
import { intFlag, requireFlag, requireGgufFile, UsageError } from "../args.js";
import { command, engineSettings } from "../command.js";

const HELP = `usage: kvgraft verify --model FILE [--trials 50] [--tokens 1024] [--slots 2] [--shift K]
         [--kv f16|q8_0] [--no-flash-attention] [--swa-full-cache true|false] [--seed S] [--json]

Proves that grafting is byte-exact: per trial, prefill random tokens in slot A and save the state,
probe slot A (fresh), load the state into slot B (graft) and probe it; the SHA-256 of both full
probability vectors (float32, every vocabulary entry in token order; probeEntries in the JSON counts
the nonzero ones hashed) must be equal. Exit code 1 if any trial differs.
Environment: KV_LLAMA=cpu|lastBuild|auto selects the llama.cpp binary (default cpu).`;

/** `kvgraft verify`: the byte-exact graft proof. */
export default command(
  {
    help: HELP,
    flags: {
      model: { type: "string" },
      trials: { type: "string" },
      tokens: { type: "string" },
      slots: { type: "string" },
      shift: { type: "string" },
      kv: { type: "string", default: "f16" },
      "no-flash-attention": { type: "boolean", default: false },
      "swa-full-cache": { type: "string", default: "true" },
      seed: { type: "string", default: "verify" },
    },
  },
  async (flags, out) => {
    const modelPath = requireGgufFile(requireFlag(flags.model, "model"), "--model");
    const trials = intFlag(flags.trials, "trials", 50);
    const tokens = intFlag(flags.tokens, "tokens", 1024);
    const slots = intFlag(flags.slots, "slots", 2, 2);
    const shift = flags.shift === undefined ? undefined : intFlag(flags.shift, "shift", 0);
    if (flags.kv !== "f16" && flags.kv !== "q8_0") throw new UsageError("--kv must be f16 or q8_0");
    if (flags["swa-full-cache"] !== "true" && flags["swa-full-cache"] !== "false")
      throw new UsageError("--swa-full-cache must be true or false");
    const engine = await Engine.open({
      modelPath,
      slots,
      contextSize: tokens + 1 + (shift ?? 0),
      kvType: flags.kv,
      flashAttention: !flags["no-flash-attention"],
      swaFullCache: flags["swa-full-cache"] === "true",
      ...engineSettings(),
    });
    try {
      const report = await verifyGraft(engine, {
        trials,
        tokens,
        seed: flags.seed,
        ...(shift !== undefined ? { shift } : {}),
        onTrial: (t, i) =>
          out.progress(
            `trial ${i + 1}/${trials}: ${t.shaEqual ? "equal" : "DIFFERENT"} kl=${t.kl} prefill ${t.prefillMs.toFixed(1)} ms, restore ${t.restoreMs.toFixed(1)} ms${t.shiftKl !== undefined ? `, shift kl=${t.shiftKl.toExponential(3)}` : ""}`,
          ),
      });
      process.stdout.write(
        `${report.shaEqual}/${report.trials} probability hashes equal (${report.probeEntries} of ${report.vocabSize} entries); KL median ${report.klMedian}, p99 ${report.klP99}; ` +
          `argmax agreement ${(100 * report.argmaxAgreement).toFixed(1)}%; state ${report.stateBytes} bytes; ` +
          `prefill ${report.prefillMs.toFixed(1)} ms vs restore ${report.restoreMs.toFixed(1)} ms (medians)\n`,
      );
      out.result(report);
      return report.shaEqual === report.trials ? 0 : 1;
    } finally {
      await engine.dispose();
    }
  },
);
