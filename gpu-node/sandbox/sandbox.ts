import { tmpdir } from "node:os";
import type { ProgramParam } from "../../shared/params.js";
import { badRequest, notImplemented, tooLarge } from "../errors.js";
import type { SandboxChoice } from "./choices.js";
import { BwrapIsolation, type IsolationMode } from "./isolation.js";
import { DEFAULT_LIMITS, mergeLimits, type SandboxLimits } from "./limits.js";
import { paramsLine } from "./params.js";
import type { ProcessOutcome } from "./process.js";
import { resolvePython } from "./python.js";
import { judge, type Verdict } from "./verdict.js";
import { WasmIsolation } from "./wasm.js";

export { ISOLATION_TEXT, SANDBOX_CHOICES, type SandboxChoice } from "./choices.js";
export type { IsolationMode } from "./isolation.js";
export type { SandboxLimits } from "./limits.js";
export type { Verdict } from "./verdict.js";

/**
 * One program to run. Parameters convention: the sandbox prepends the line `PARAMS = [...]`
 * (`params` as exact Python literals, see ./params.ts) to `source`. A program reads its problem's numbers
 * from `PARAMS` in their order of appearance in the problem text and prints the answer as its last
 * non-empty stdout line; with `expect`, that line must equal it (see `answersEqual`). Because of
 * that first line, a program cannot begin with `from __future__` imports.
 */
export interface ProgramJob {
  source: string;
  params?: readonly ProgramParam[];
  expect?: string;
  limits?: Partial<SandboxLimits>;
}

/** The result of one run; stdout and stderr are truncated to the output limit. */
export interface ProgramResult {
  verdict: Verdict;
  stdout: string;
  stderr: string;
  /** The program's exit status; null when a signal ended it or it never ran. */
  exitCode: number | null;
  /** CPU time of the program and the children it waited for; 0 when it was killed before reporting. */
  cpuMs: number;
  wallMs: number;
  isolation: IsolationMode;
  /** The last non-empty stdout line. */
  answer: string | null;
}

export interface SandboxOptions {
  /** Which backend runs programs (`KVGRAFT_SANDBOX`); default `auto` (WebAssembly). */
  backend?: SandboxChoice;
  /** Interpreters the WebAssembly backend keeps booted and waiting; default 1 (a pool: its concurrency). */
  warm?: number;
  /** Python command to resolve for bubblewrap (a shim is fine); default "python3". */
  python?: string;
  /** Default limits for every job. */
  limits?: Partial<SandboxLimits>;
  /** Where job directories are made (and removed); default the OS temp directory. */
  workDir?: string;
}

/** What both backends do: run one program file's text under limits, and stop what waits. */
interface Backend {
  readonly mode: IsolationMode;
  execute(source: string, limits: SandboxLimits): Promise<ProcessOutcome>;
  warmed(): Promise<void>;
  close(): void;
}

const MAX_SOURCE_BYTES = 1024 * 1024;
/** Run once at creation under bubblewrap: the sandbox must compute, and must hold (no root, no capabilities, no /etc). */
const BWRAP_PROBE = [
  "import os",
  'assert os.getuid() != 0 and os.geteuid() != 0, "runs as uid 0"',
  'assert open("/proc/self/status").read().split("CapEff:")[1].split()[0].strip("0") == "", "has capabilities"',
  'assert not os.path.exists("/etc/passwd"), "sees host files"',
];
/** Run once at creation on WebAssembly: no bridge to JavaScript, no socket, no host file, no environment. */
const WASM_PROBE = [
  "import os, socket",
  "for name in ('js', 'pyodide_js', 'pyodide', '_pyodide_core', 'ctypes'):",
  "    try:",
  "        __import__(name)",
  "        raise AssertionError('imports ' + name)",
  "    except ImportError:",
  "        pass",
  "try:",
  "    socket.socket()",
  "    raise AssertionError('opens sockets')",
  "except OSError:",
  "    pass",
  'assert not os.path.exists("/etc/passwd"), "sees host files"',
  'assert not os.environ, "has an environment"',
];
const probeJob = (lines: string[]): ProgramJob => ({
  source: [...lines, "print(sum(PARAMS))"].join("\n"),
  params: [40, 2],
  expect: "42",
});
const INSTALL_BWRAP =
  "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), or use the default KVGRAFT_SANDBOX=auto (WebAssembly)";

/**
 * Runs Python programs, each in a process of its own, isolated and resource-limited: on CPython
 * compiled to WebAssembly (`wasm`, the default: needs only npm's packages) or under bubblewrap
 * with the host's CPython (`bwrap`). Both give the same verdicts.
 */
export class Sandbox {
  private constructor(
    private readonly backend: Backend,
    private readonly limits: SandboxLimits,
  ) {}

  /**
   * Starts the chosen backend and checks that it runs and isolates a tiny program here. Fails
   * closed: where it cannot, throws 501 `sandbox_unavailable` saying what to install (a
   * condition that does not pass by waiting, so without Retry-After).
   */
  static async create(options: SandboxOptions = {}): Promise<Sandbox> {
    const limits = mergeLimits(DEFAULT_LIMITS, options.limits);
    const choice = options.backend ?? "auto";
    const backend = choice === "bwrap" ? await bubblewrap(options) : await wasm(options);
    const sandbox = new Sandbox(backend, limits);
    const probe = await sandbox.run(probeJob(backend.mode === "bwrap" ? BWRAP_PROBE : WASM_PROBE));
    if (probe.verdict !== "ok") {
      sandbox.close();
      const why = `${probe.verdict}: ${probe.stderr.trim().slice(-300)}`;
      throw notImplemented(
        "sandbox_unavailable",
        `programs are not run: the ${backend.mode} sandbox does not isolate here (${why})`,
      );
    }
    return sandbox;
  }

  /** The isolation in force, for health endpoints and verdicts. */
  get isolation(): IsolationMode {
    return this.backend.mode;
  }

  /** Runs one job. Bad input is a 4xx DomainError. */
  async run(job: ProgramJob): Promise<ProgramResult> {
    const limits = mergeLimits(this.limits, job.limits);
    const outcome = await this.backend.execute(programSource(job), limits);
    const { verdict, answer } = judge(outcome, limits.cpuSeconds, job.expect);
    return {
      verdict,
      stdout: outcome.stdout,
      stderr: outcome.stderr,
      exitCode: outcome.report?.exit ?? null,
      cpuMs: outcome.report?.cpuMs ?? 0,
      wallMs: outcome.wallMs,
      isolation: this.isolation,
      answer,
    };
  }

  /** Resolves when the interpreters kept waiting (the WebAssembly backend's) have booted. */
  warmed(): Promise<void> {
    return this.backend.warmed();
  }

  /** Stops interpreters waiting for programs (the WebAssembly backend's); running jobs finish. */
  close(): void {
    this.backend.close();
  }
}

async function bubblewrap(options: SandboxOptions): Promise<Backend> {
  const python = await resolvePython(options.python ?? "python3");
  let isolation: BwrapIsolation | null;
  try {
    isolation = BwrapIsolation.detect(python, options.workDir ?? tmpdir());
  } catch (err) {
    throw notImplemented("sandbox_unavailable", `programs are not run: ${(err as Error).message}`);
  }
  if (!isolation)
    throw notImplemented(
      "sandbox_unavailable",
      `programs are not run: KVGRAFT_SANDBOX=bwrap, but bwrap is not on PATH; ${INSTALL_BWRAP}`,
    );
  return isolation;
}

function wasm(options: SandboxOptions): Promise<Backend> {
  return WasmIsolation.create(options.warm ?? 1);
}

/** The program file's text: the PARAMS line, then the job's source. */
function programSource(job: ProgramJob): string {
  if (typeof job.source !== "string") throw badRequest("invalid_program", "program source must be a string");
  if (Buffer.byteLength(job.source) > MAX_SOURCE_BYTES)
    throw tooLarge("program_too_large", `program source is over ${MAX_SOURCE_BYTES} bytes`);
  return `${paramsLine(job.params)}\n${job.source}`;
}
