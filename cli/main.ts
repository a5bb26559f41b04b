#!/usr/bin/env node
import { DomainError } from "../shared/errors.js";
import { UsageError } from "./args.js";

/** One module per subcommand under ./commands; each default-exports `(argv) => Promise<exit code>`. */
const commands: Record<string, { module: string; summary: string }> = {
  "synth-model": { module: "./commands/synth-model.js", summary: "write a seeded random-weight GGUF model" },
  verify: { module: "./commands/verify.js", summary: "prove that grafting a saved KV state is byte-exact" },
  bench: { module: "./commands/bench.js", summary: "benchmarks: bench graft | library | edge" },
  serve: { module: "./commands/serve.js", summary: "run a service: serve gpu | serve edge" },
  start: {
    module: "./commands/start.js",
    summary: "run the embedded default (GPU node + edge) on this machine",
  },
  sandbox: { module: "./commands/sandbox.js", summary: "run one Python program in the sandbox" },
  eval: { module: "./commands/eval.js", summary: "evaluations: eval router" },
  flywheel: { module: "./commands/flywheel.js", summary: "run the flywheel worker" },
};

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`);
  return `usage: kvgraft <command> [flags]\n\ncommands:\n${lines.join("\n")}\n\nEvery command accepts --help; --json prints one JSON object last on stdout.`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h") {
    process.stdout.write(`${usage()}\n`);
    return name ? 0 : 2;
  }
  const entry = commands[name];
  if (!entry) {
    process.stderr.write(`kvgraft: unknown command '${name}'\n\n${usage()}\n`);
    return 2;
  }
  const mod = (await import(entry.module)) as { default: (argv: string[]) => Promise<number> };
  try {
    return await mod.default(rest);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`kvgraft ${name}: ${err.message}\n(see kvgraft ${name} --help)\n`);
      return 2;
    }
    // An expected refusal (e.g. 503 sandbox_unavailable) is a message, not a stack trace.
    if (err instanceof DomainError) {
      process.stderr.write(`kvgraft ${name}: ${err.code}: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`kvgraft: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
