import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { badRequest, tooLarge } from "../../shared/errors.js";
import { ISOLATION_MODES, Isolation, type IsolationMode } from "./isolation.js";
import { DEFAULT_LIMITS, mergeLimits, type SandboxLimits } from "./limits.js";
import { runProcess } from "./process.js";
import { resolvePython } from "./python.js";
import { judge, type Verdict } from "./verdict.js";

export type { IsolationMode } from "./isolation.js";
export type { SandboxLimits } from "./limits.js";
export type { Verdict } from "./verdict.js";

/**
 * One program to run. Parameters convention: the sandbox prepends the line `PARAMS = [...]` (the
 * JSON array of `params`, which is valid Python) to `source`. A program reads its problem's numbers
 * from `PARAMS` in their order of appearance in the problem text and prints the answer as its last
 * non-empty stdout line; with `expect`, that line must equal it (see `answersEqual`). Because of
 * that first line, a program cannot begin with `from __future__` imports.
 */
export interface ProgramJob {
  source: string;
  params?: readonly number[];
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
  /** Force one mode instead of the strongest that works (tests use this for the weaker paths). */
  isolation?: IsolationMode;
  /** Default limits for every job. */
  limits?: Partial<SandboxLimits>;
  /** Where job directories are made (and removed); default the OS temp directory. */
  workDir?: string;
}

const MAX_SOURCE_BYTES = 1024 * 1024;
const MAX_PARAMS = 10_000;
const PROBE: ProgramJob = { source: "print(sum(PARAMS))", params: [40, 2], expect: "42" };

/** Runs Python programs as separate, isolated, resource-limited processes. */
export class Sandbox {
  private constructor(
    private readonly isolator: Isolation,
    private readonly limits: SandboxLimits,
    private readonly workDir: string,
  ) {}

  /**
   * Resolves the interpreter and picks the strongest isolation that actually runs a tiny program
   * here (or checks the forced one). Throws when none works.
   */
  static async create(options: SandboxOptions = {}): Promise<Sandbox> {
    const python = await resolvePython(options.python ?? "python3");
    const limits = mergeLimits(DEFAULT_LIMITS, options.limits);
    const workDir = options.workDir ?? tmpdir();
    const failures: string[] = [];
    for (const mode of options.isolation ? [options.isolation] : ISOLATION_MODES) {
      const isolation = Isolation.forMode(mode, python, workDir);
      if (!isolation) {
        failures.push(`${mode}: not installed`);
        continue;
      }
      const sandbox = new Sandbox(isolation, limits, workDir);
      const probe = await sandbox.run(PROBE);
      if (probe.verdict === "ok") return sandbox;
      failures.push(`${mode}: ${probe.verdict} ${probe.stderr.trim().slice(0, 300)}`);
    }
    throw new Error(`no sandbox isolation works here (${failures.join("; ")})`);
  }

  /** The isolation in force, for health endpoints. */
  get isolation(): IsolationMode {
    return this.isolator.mode;
  }

  /** Whether RLIMIT_NPROC binds each job (see `Isolation.limitsProcesses`), for health endpoints. */
  get limitsProcesses(): boolean {
    return this.isolator.limitsProcesses;
  }

  /** Runs one job in a fresh scratch directory, removed afterwards. Bad input is a 4xx DomainError. */
  async run(job: ProgramJob): Promise<ProgramResult> {
    const limits = mergeLimits(this.limits, job.limits);
    const source = programSource(job);
    const jobDir = await mkdtemp(join(this.workDir, "kvgraft-sandbox-"));
    try {
      const files = { program: join(jobDir, "main.py"), scratch: join(jobDir, "scratch") };
      await writeFile(files.program, source, { mode: 0o644 });
      await mkdir(files.scratch, { mode: 0o700 });
      const plan = this.isolator.plan(files, limits);
      if (plan.uid !== null) {
        await chmod(jobDir, 0o711);
        await chown(files.scratch, plan.uid, plan.uid);
      }
      const outcome = await runProcess(plan, limits);
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
      await rm(jobDir, { recursive: true, force: true });
    }
  }
}

/** The program file's text: the PARAMS line, then the job's source. */
function programSource(job: ProgramJob): string {
  if (typeof job.source !== "string") throw badRequest("invalid_program", "program source must be a string");
  if (Buffer.byteLength(job.source) > MAX_SOURCE_BYTES)
    throw tooLarge("program_too_large", `program source is over ${MAX_SOURCE_BYTES} bytes`);
  const params = job.params ?? [];
  if (!Array.isArray(params) || params.length > MAX_PARAMS || !params.every(Number.isFinite))
    throw badRequest("invalid_params", `params must be an array of at most ${MAX_PARAMS} finite numbers`);
  return `PARAMS = ${JSON.stringify(params)}\n${job.source}`;
}
