#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DomainError } from "../shared/errors.js";
import { ConfigError } from "../shared/http/config.js";
import { UsageError, UserError } from "./args.js";
import { packageRoot } from "./package-root.js";
import { portInUseMessage } from "./ports.js";

interface Command {
  /** Module under ./commands that default-exports `(argv) => Promise<exit code>`. */
  module: string;
  summary: string;
  /** Subcommands (`kvgraft bench graft`), each with its own --help. */
  subcommands?: Record<string, string>;
}

const commands: Record<string, Command> = {
  "synth-model": { module: "./commands/synth-model.js", summary: "write a seeded random-weight GGUF model" },
  verify: { module: "./commands/verify.js", summary: "prove that grafting a saved KV state is byte-exact" },
  bench: {
    module: "./commands/bench.js",
    summary: "benchmarks",
    subcommands: {
      graft: "recompute vs hot graft vs warm (RAM) and cold (disk) restore, hashes compared",
      library: "cold and warm access time by depth over a deposited library",
      http: "the same hot graft in-process and over the signed loopback HTTP API",
      router: "routing latency at the edge over a generated libSQL library",
      edge: "open-loop constant-rate load through the edge",
      "scale-out": "graft load on 1 GPU node vs N behind one edge, and a node killed under load",
      "fast-path": "sequential library answers through a Node edge over loopback HTTP",
      bucket: "a graft fetched from a bucket (s3rver on loopback) vs local cold restore",
      sandbox: "the starter programs' verdict latency and sustained rate, per sandbox backend",
      serve: "kvgraft's GPU node against llama.cpp's llama-server: req/s, p99, tokens/s",
      batches: "concurrent grafts in process and the sequences each llama_decode carried",
    },
  },
  serve: {
    module: "./commands/serve.js",
    summary: "run a service",
    subcommands: { gpu: "the GPU node (model, blocks, sandbox)", edge: "the edge (HTTP API) on Node" },
  },
  start: {
    module: "./commands/start.js",
    summary: "run the embedded default (GPU node + edge) on this machine (npm start)",
  },
  sandbox: { module: "./commands/sandbox.js", summary: "run one Python program in the sandbox" },
  eval: {
    module: "./commands/eval.js",
    summary: "evaluations",
    subcommands: {
      router: "routing accuracy, abstentions and transfer on a development set",
      solve: "the plain model's accuracy through the GPU node's solve path (held-in, held-out families)",
      flywheel: "the reference experiment: baseline, deposit, replay, transfer, graft, controls",
      acceptance: "what the flywheel deposits without a reference answer, and how much of it is wrong",
    },
  },
  flywheel: { module: "./commands/flywheel.js", summary: "run the flywheel worker" },
};

/** The top-level help: every command and the global flags, in two aligned columns. */
function usage(): string {
  const rows: [string, string][] = [];
  for (const [name, command] of Object.entries(commands)) {
    if (!command.subcommands) rows.push([name, command.summary]);
    else
      for (const [sub, summary] of Object.entries(command.subcommands))
        rows.push([`${name} ${sub}`, summary]);
  }
  const general: [string, string][] = [
    ["kvgraft <command> --help", "the command's flags"],
    ["kvgraft --version", "the version"],
    ["--json", "print one JSON object as the last stdout line"],
    ["--verbose", "print the stack trace of an internal error"],
  ];
  // The summaries start in one column: commands are indented by 2, the general lines are not.
  const width =
    Math.max(...rows.map(([name]) => name.length + 2), ...general.map(([name]) => name.length)) + 2;
  const column = (rows: [string, string][], indent: string) =>
    rows.map(([name, summary]) => `${indent}${name.padEnd(width - indent.length)}${summary}`);
  return [
    "usage: kvgraft <command> [flags]",
    "",
    "commands:",
    ...column(rows, "  "),
    "",
    ...column(general, ""),
  ].join("\n");
}

function version(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string };
  return pkg.version;
}

/** A Node system error (`code` like ENOENT) with the fields Node sets where they apply. */
type SystemError = Error & { code: string; syscall?: string; path?: string; address?: string; port?: number };

function isSystemError(err: unknown): err is SystemError {
  return err instanceof Error && typeof (err as { code?: unknown }).code === "string";
}

/**
 * The one line for an error the user can fix (a mistake, a missing file or program, a busy port,
 * a refused connection), or null for an internal error.
 */
function userMessage(err: unknown, command: string): string | null {
  if (err instanceof UsageError) return `${err.message} (see kvgraft ${command} --help)`;
  if (err instanceof UserError) return err.message;
  if (err instanceof ConfigError) return `${err.message} (see kvgraft ${command} --help)`;
  // An expected refusal with its reason (e.g. 501 sandbox_unavailable: install python3).
  if (err instanceof DomainError) return `${err.message} (${err.code})`;
  // fetch wraps connection errors: TypeError("fetch failed", {cause}).
  const cause = err instanceof TypeError ? err.cause : undefined;
  if (isSystemError(cause) && (cause.code === "ECONNREFUSED" || cause.code === "ENOTFOUND"))
    return `cannot connect to ${cause.address ?? (cause as { hostname?: string }).hostname ?? "the server"}${cause.port ? `:${cause.port}` : ""} (${cause.code}); check the URL and that the service runs`;
  if (!isSystemError(err)) return null;
  const path = err.path ?? "";
  if (err.syscall?.startsWith("spawn") && err.code === "ENOENT")
    return `'${path}' was not found on PATH; install it (see README, Requirements)`;
  switch (err.code) {
    case "ENOENT":
      return path ? `${path} does not exist; check the path` : null;
    case "ENOTDIR":
      return path ? `${path}: a part of the path is not a folder; check the path` : null;
    case "EISDIR":
      return path ? `${path} is a folder where a file is needed; give a file path` : null;
    case "EACCES":
    case "EPERM":
      return path ? `no permission for ${path} (${err.code}); choose a path you may write or read` : null;
    case "EROFS":
      return path ? `${path} is on a read-only file system; choose a writable path` : null;
    case "ENOSPC":
      return `no space left on the device${path ? ` for ${path}` : ""}; free some space`;
    case "EADDRINUSE":
      return err.port !== undefined
        ? `${portInUseMessage(err.address ?? "127.0.0.1", err.port)}; stop that process or choose another port`
        : null;
    default:
      return null;
  }
}

async function main(argv: string[], verbose: boolean): Promise<number> {
  const [name, ...rest] = argv;
  if (name === "--version" || name === "-V") {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (!name || name === "--help" || name === "-h") {
    (name ? process.stdout : process.stderr).write(`${usage()}\n`);
    return name ? 0 : 2;
  }
  const entry = commands[name];
  if (!entry) {
    process.stderr.write(`kvgraft: unknown command '${name}' (see kvgraft --help)\n`);
    return 2;
  }
  // Messages name the subcommand too ("kvgraft serve gpu: ..."), and point to its own --help.
  const label = rest[0] && entry.subcommands && rest[0] in entry.subcommands ? `${name} ${rest[0]}` : name;
  try {
    const mod = (await import(entry.module)) as { default: (argv: string[]) => Promise<number> };
    return await mod.default(rest);
  } catch (err) {
    const message = userMessage(err, label);
    if (message !== null) {
      process.stderr.write(`kvgraft ${label}: ${message}\n`);
      if (verbose && err instanceof Error) process.stderr.write(`${err.stack}\n`);
      return 2;
    }
    const text = err instanceof Error ? err.message : String(err);
    process.stderr.write(
      verbose && err instanceof Error
        ? `kvgraft ${label}: internal error: ${err.stack}\n`
        : `kvgraft ${label}: internal error: ${text} (run it again with --verbose for the stack trace)\n`,
    );
    return 1;
  }
}

// Started by another kvgraft process over IPC (`kvgraft start` runs its GPU node so): when that
// parent dies, even by SIGKILL, the channel closes, and this process stops as on SIGTERM instead
// of living on, re-parented, holding its port.
if (process.channel) {
  process.channel.unref();
  process.once("disconnect", () => process.kill(process.pid, "SIGTERM"));
}

const argv = process.argv.slice(2);
const verbose = argv.includes("--verbose");
main(
  argv.filter((arg) => arg !== "--verbose"),
  verbose,
).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(
      `kvgraft: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exitCode = 1;
  },
);
