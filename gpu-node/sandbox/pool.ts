import { availableParallelism } from "node:os";
import { tooManyRequests } from "../../shared/errors.js";
import { type ProgramJob, type ProgramResult, Sandbox, type SandboxOptions } from "./sandbox.js";

export interface SandboxPoolOptions extends SandboxOptions {
  /** Jobs running at once; default the machine's available parallelism. */
  concurrency?: number;
  /** Jobs allowed to wait; one more is refused with 429 `sandbox_busy`. */
  maxQueued?: number;
}

/** Runs sandbox jobs with bounded concurrency; the rest wait in a FIFO queue. */
export class SandboxPool {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly sandbox: Sandbox,
    readonly concurrency = availableParallelism(),
    private readonly maxQueued = 1000,
  ) {
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new Error(`sandbox concurrency must be a positive integer, got ${concurrency}`);
  }

  /** Detects the isolation (see `Sandbox.create`) and builds a pool around it. */
  static async create(options: SandboxPoolOptions = {}): Promise<SandboxPool> {
    return new SandboxPool(await Sandbox.create(options), options.concurrency, options.maxQueued);
  }

  /** The isolation in force, for health endpoints. */
  get isolation() {
    return this.sandbox.isolation;
  }

  /** Whether RLIMIT_NPROC binds each job, for health endpoints. */
  get limitsProcesses() {
    return this.sandbox.limitsProcesses;
  }

  /** Jobs running now and jobs waiting. */
  get load(): { running: number; queued: number } {
    return { running: this.running, queued: this.waiting.length };
  }

  /** Runs one job when a slot is free. */
  async runProgram(job: ProgramJob): Promise<ProgramResult> {
    await this.acquire();
    try {
      return await this.sandbox.run(job);
    } finally {
      this.release();
    }
  }

  private async acquire(): Promise<void> {
    if (this.running < this.concurrency) {
      this.running++;
      return;
    }
    if (this.waiting.length >= this.maxQueued)
      throw tooManyRequests("sandbox_busy", "too many programs are waiting for the sandbox", 1);
    // The slot passes straight from the releasing job to this one, so `running` is unchanged.
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}
