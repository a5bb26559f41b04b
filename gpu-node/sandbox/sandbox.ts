import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { badRequest, tooLarge, unavailable } from "../../shared/errors.js";
import type { ProgramParam } from "../../shared/params.js";
import { Isolation, type IsolationMode } from "./isolation.js";
import { DEFAULT_LIMITS, mergeLimits, type SandboxLimits } from "./limits.js";
import { paramsLine } from "./params.js";
import { runProcess } from "./process.js";
import { resolvePython } from "./python.js";
import { judge, type Verdict } from "./verdict.js";

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
  /** Python command to resolve (a shim is fine); default "python3". */
  python?: string;
  /** Default limits for every job. */
  limits?: Partial<SandboxLimits>;
  /** Where job directories are made (and removed); default the OS temp directory. */
  workDir?: string;
}

const MAX_SOURCE_BYTES = 1024 * 1024;
/** Run once at creation: the sandbox must compute, and must hold (no root, no capabilities, no /etc). */
const PROBE: ProgramJob = {
  source: [
    "import os",
    'assert os.getuid() != 0 and os.geteuid() != 0, "runs as uid 0"',
    'assert open("/proc/self/status").read().split("CapEff:")[1].split()[0].strip("0") == "", "has capabilities"',
    'assert not os.path.exists("/etc/passwd"), "sees host files"',
    "print(sum(PARAMS))",
  ].join("\n"),
  params: [40, 2],
  expect: "42",
};
const INSTALL_BWRAP =
  "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)";

/** Runs Python programs as separate processes under bubblewrap, isolated and resource-limited. */
export class Sandbox {
  private constructor(
    private readonly isolator: Isolation,
    private readonly limits: SandboxLimits,
    private readonly workDir: string,
  ) {}

  /**
   * Resolves the interpreter, finds bubblewrap and checks that it runs and isolates a tiny program
   * here. Fails closed: throws 503 `sandbox_unavailable` (saying what to install) otherwise.
   */
  static async create(options: SandboxOptions = {}): Promise<Sandbox> {
    const python = await resolvePython(options.python ?? "python3");
    const limits = mergeLimits(DEFAULT_LIMITS, options.limits);
    const isolation = Isolation.detect(python);
    if (!isolation)
      throw unavailable(
        "sandbox_unavailable",
        `programs are not run: bwrap is not on PATH; ${INSTALL_BWRAP}`,
      );
    const sandbox = new Sandbox(isolation, limits, options.workDir ?? tmpdir());
    const probe = await sandbox.run(PROBE);
    if (probe.verdict !== "ok") {
      const why = `${probe.verdict}: ${probe.stderr.trim().slice(-300)}`;
      throw unavailable(
        "sandbox_unavailable",
        `programs are not run: bubblewrap does not isolate here (${why})`,
      );
    }
    return sandbox;
  }

  /** The isolation in force, for health endpoints and verdicts. */
  get isolation(): IsolationMode {
    return this.isolator.mode;
  }

  /** Runs one job in a fresh job directory, removed afterwards. Bad input is a 4xx DomainError. */
  async run(job: ProgramJob): Promise<ProgramResult> {
    const limits = mergeLimits(this.limits, job.limits);
    const source = programSource(job);
    const dir = await mkdtemp(join(this.workDir, "kvgraft-sandbox-"));
    try {
      const program = join(dir, "main.py");
      await writeFile(program, source, { mode: 0o644 });
      const outcome = await runProcess(this.isolator.plan({ program, dir }, limits), limits);
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
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}

/** The program file's text: the PARAMS line, then the job's source. */
function programSource(job: ProgramJob): string {
  if (typeof job.source !== "string") throw badRequest("invalid_program", "program source must be a string");
  if (Buffer.byteLength(job.source) > MAX_SOURCE_BYTES)
    throw tooLarge("program_too_large", `program source is over ${MAX_SOURCE_BYTES} bytes`);
  return `${paramsLine(job.params)}\n${job.source}`;
}
