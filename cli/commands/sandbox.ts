import { ISOLATION_TEXT, type ProgramResult, type Sandbox } from "../../gpu-node/sandbox/sandbox.js";
import { DomainError } from "../../shared/errors.js";
import { readFlagFile, requireFlag, UsageError } from "../args.js";
import { command, localSandbox } from "../command.js";

const HELP = `usage: kvgraft sandbox --file PROGRAM.py [--params JSON] [--expect ANSWER] [--json]

Runs one Python program in the sandbox and prints its verdict: ok, wrong_answer, timeout, memory,
output_limit or error. The line PARAMS = <--params, a JSON array of numbers> is prepended to the
program; its answer is its last non-empty stdout line, compared with --expect when given.

KVGRAFT_SANDBOX picks the backend: auto (default) or wasm, ${ISOLATION_TEXT.wasm};
bwrap, ${ISOLATION_TEXT.bwrap} (needs bubblewrap and python3, and refuses without them).
Exit 0 when the verdict is ok, 1 when not, 3 when the chosen sandbox cannot run here.`;

/** `kvgraft sandbox`: runs one program file and reports the verdict. */
export default command(
  { help: HELP, flags: { file: { type: "string" }, params: { type: "string" }, expect: { type: "string" } } },
  async (flags, out) => {
    const file = requireFlag(flags.file, "file");
    const source = await readFlagFile(file, "--file");
    const params = flags.params === undefined ? [] : parseParams(flags.params);
    let sandbox: Sandbox;
    try {
      // One program: no interpreter needs to wait booted for a next one.
      sandbox = await localSandbox({ warm: 0 });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      out.progress(`kvgraft sandbox: ${err.message}`);
      out.result({ error: { code: err.code, message: err.message } });
      return 3;
    }
    const result = await sandbox.run({ source, params, expect: flags.expect }).finally(() => sandbox.close());
    process.stdout.write(summary(result));
    const { verdict, stdout, stderr, cpuMs, wallMs, isolation } = result;
    out.result({ verdict, stdout, stderr, cpuMs, wallMs, isolation });
    return result.verdict === "ok" ? 0 : 1;
  },
);

function parseParams(text: string): number[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`--params must be a JSON array of numbers, got ${text}`);
  }
  if (!Array.isArray(value) || !value.every((n) => typeof n === "number" && Number.isFinite(n)))
    throw new UsageError(`--params must be a JSON array of finite numbers, got ${text}`);
  return value;
}

function summary(result: ProgramResult): string {
  const lines = [
    `verdict: ${result.verdict}${result.answer === null ? "" : ` (answer: ${result.answer})`}`,
    `isolation: ${result.isolation}, exit code ${result.exitCode ?? "none"}, cpu ${result.cpuMs} ms, wall ${result.wallMs} ms`,
  ];
  if (result.stdout) lines.push("--- stdout ---", result.stdout.trimEnd());
  if (result.stderr) lines.push("--- stderr ---", result.stderr.trimEnd());
  return `${lines.join("\n")}\n`;
}
