import { existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { type ModelSpec, PRESETS, parameterCount, resolveSpec } from "../../gpu-node/synth/presets.js";
import { writeSyntheticModel } from "../../gpu-node/synth/synth-model.js";
import { requireFlag, UsageError, UserError } from "../args.js";
import { command } from "../command.js";

const HELP = `usage: kvgraft synth-model --preset NAME --out FILE.gguf [--seed S] [--quant f16|q8_0]
         [--arch llama|qwen3|gemma3] [--vocab N] [--embd N] [--layers N] [--heads N] [--kv-heads N]
         [--head-dim N] [--ffn N] [--context N] [--sliding-window N] [--json]

Writes a GGUF v3 model with seeded random weights (same seed, same bytes).
presets: ${Object.keys(PRESETS).join(", ")}`;

const dimensionFlags = {
  vocab: "vocab",
  embd: "embd",
  layers: "layers",
  heads: "heads",
  "kv-heads": "kvHeads",
  "head-dim": "headDim",
  ffn: "ffn",
  context: "contextLength",
  "sliding-window": "slidingWindow",
} as const;

/** `kvgraft synth-model`: writes a seeded random-weight GGUF file. */
export default command(
  {
    help: HELP,
    flags: {
      preset: { type: "string" },
      out: { type: "string" },
      seed: { type: "string", default: "0" },
      quant: { type: "string", default: "f16" },
      arch: { type: "string" },
      ...Object.fromEntries(Object.keys(dimensionFlags).map((k) => [k, { type: "string" as const }])),
    },
  },
  async (flags, output) => {
    const preset = requireFlag(flags.preset, "preset");
    const out = requireFlag(flags.out, "out");
    const folder = dirname(resolve(out));
    if (!existsSync(folder) || !statSync(folder).isDirectory())
      throw new UserError(
        `--out ${out}: the folder ${folder} does not exist; create it or choose another path`,
      );
    if (flags.quant !== "f16" && flags.quant !== "q8_0") throw new UsageError("--quant must be f16 or q8_0");
    if (flags.arch !== undefined && !["llama", "qwen3", "gemma3"].includes(String(flags.arch)))
      throw new UsageError("--arch must be llama, qwen3 or gemma3");
    const overrides: Partial<ModelSpec> = { weights: flags.quant };
    if (flags.arch) overrides.arch = flags.arch as ModelSpec["arch"];
    for (const [flag, key] of Object.entries(dimensionFlags)) {
      const raw = (flags as Record<string, unknown>)[flag];
      if (raw === undefined) continue;
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 1)
        throw new UsageError(`--${flag} must be a positive integer, got ${String(raw)}`);
      overrides[key] = n;
    }
    let spec: ModelSpec;
    try {
      spec = resolveSpec(preset, overrides);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const started = performance.now();
    let lastReport = 0;
    const bytes = writeSyntheticModel(out, spec, String(flags.seed), (written, total) => {
      const now = performance.now();
      if (total < 256 * 2 ** 20 || (now - lastReport < 1000 && written < total)) return;
      lastReport = now;
      process.stderr.write(
        `synth-model: ${(written / 2 ** 30).toFixed(2)} / ${(total / 2 ** 30).toFixed(2)} GiB (${((100 * written) / total).toFixed(0)}%)\n`,
      );
    });
    const seconds = (performance.now() - started) / 1000;
    const result = {
      path: out,
      preset,
      spec,
      seed: String(flags.seed),
      parameters: parameterCount(spec),
      bytes,
      seconds,
    };
    process.stdout.write(
      `wrote ${out}: ${spec.arch}, ${(result.parameters / 1e6).toFixed(1)}M parameters, ${(bytes / 2 ** 20).toFixed(1)} MiB in ${seconds.toFixed(1)} s\n`,
    );
    output.result(result);
    return 0;
  },
);
