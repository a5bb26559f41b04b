/**
 * The one preamble of the kvgraft commands: strict flags (every command takes `--json` and
 * `--help`/`-h`), `--help` printing the command's usage, where lines go (under `--json` stdout
 * keeps one line, the result), and what a command opens from the GPU node's environment (an
 * engine's binary and threads, a local sandbox, a model file). Errors need nothing here:
 * cli/main.ts turns a UsageError, UserError, ConfigError or DomainError into one line and exit 2,
 * anything else into exit 1.
 */
import { join, resolve } from "node:path";
import type { ParseArgsConfig } from "node:util";
import { type GpuEnv, greedyPickSetting, stepFillSetting } from "../gpu-node/config.js";
import type { StepFillMode } from "../gpu-node/engine/step-fill.js";
import type { Sandbox, SandboxOptions } from "../gpu-node/sandbox/sandbox.js";
import { EMBEDDED_MODEL } from "../tools/model/spec.js";
import { parseFlags, printJson, requireGgufFile } from "./args.js";
import { readCliGpuEnv } from "./gpu-env.js";
import { packageRoot } from "./package-root.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** The flags every command takes. */
const STANDARD = {
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const satisfies Options;

/** A command's parsed flags: its own and the standard ones. */
export type Flags<O extends Options> = ReturnType<typeof parseFlags<O & typeof STANDARD>>;

/** Where a command's lines go. */
export interface CommandOutput {
  /** `--json`: the last stdout line is the result object. */
  json: boolean;
  /** A line for the person at the terminal: stdout, or stderr under `--json`. */
  say(line: string): void;
  /** Progress: stderr. */
  progress(line: string): void;
  /** The result as the last stdout line, under `--json` only. */
  result(value: unknown): void;
}

/**
 * A command from its usage text, its own flags and its body: `(argv) => exit code`, the shape
 * cli/main.ts runs.
 */
export function command<O extends Options>(
  spec: { help: string; flags: O },
  run: (flags: Flags<O>, out: CommandOutput) => Promise<number>,
): (argv: string[]) => Promise<number> {
  return async (argv) => {
    const flags = parseFlags(argv, { ...spec.flags, ...STANDARD }) as Flags<O>;
    const { help, json } = flags as unknown as { help: boolean; json: boolean };
    if (help) {
      process.stdout.write(`${spec.help}\n`);
      return 0;
    }
    return run(flags, {
      json,
      say: (line) => (json ? process.stderr : process.stdout).write(`${line}\n`),
      progress: (line) => process.stderr.write(`${line}\n`),
      result: (value) => {
        if (json) printJson(value);
      },
    });
  };
}

/**
 * The engine settings the environment gives a command that opens an engine (KV_LLAMA, KV_THREADS,
 * KV_STEP_FILL, KV_GREEDY_PICK).
 */
export function engineSettings(): {
  binary: GpuEnv["KV_LLAMA"];
  threads?: number;
  stepFill?: StepFillMode;
  greedyPick?: boolean;
} {
  const env = readCliGpuEnv();
  const stepFill = stepFillSetting(env.KV_STEP_FILL);
  const greedyPick = greedyPickSetting(env.KV_GREEDY_PICK);
  return {
    binary: env.KV_LLAMA,
    ...(env.KV_THREADS ? { threads: env.KV_THREADS } : {}),
    ...(stepFill !== undefined ? { stepFill } : {}),
    ...(greedyPick !== undefined ? { greedyPick } : {}),
  };
}

/** A sandbox in this process, of the backend KVGRAFT_SANDBOX names. */
export async function localSandbox(options: Omit<SandboxOptions, "backend"> = {}): Promise<Sandbox> {
  const backend = readCliGpuEnv().KVGRAFT_SANDBOX;
  // Loaded on use: most commands run no program.
  const { Sandbox } = await import("../gpu-node/sandbox/sandbox.js");
  return Sandbox.create({ ...options, backend });
}

/** The GGUF model `--model` names, else the embedded one; a UserError when it is not a readable GGUF file. */
export function modelOrEmbedded(flag: string | undefined): string {
  return flag
    ? requireGgufFile(resolve(flag), "--model")
    : requireGgufFile(join(packageRoot(), EMBEDDED_MODEL), "the embedded model");
}
