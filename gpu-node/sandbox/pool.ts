import { availableParallelism } from "node:os";
import { unavailable } from "../errors.js";
import { AdmissionQueue } from "../server/queue.js";
import { type ProgramJob, type ProgramResult, Sandbox, type SandboxOptions } from "./sandbox.js";

export interface SandboxPoolOptions extends SandboxOptions {
  /** Jobs running at once; default the machine's available parallelism. */
  concurrency?: number;
  /** Jobs allowed to wait; one more is refused at once with 429 `sandbox_busy`. Default 32 (a solve's most samples). */
  maxQueued?: number;
  /** Longest wait for a slot; past it the job is refused with 503 `sandbox_busy`. Default 10 s. */
  maxWaitMs?: number;
  /** Retry-After of a refusal. */
  retryAfterS?: number;
}

/**
 * Runs sandbox jobs through the same admission control as model work (`AdmissionQueue`): bounded
 * concurrency, a short bounded FIFO queue, and a wait that ends at the caller's signal (a request's
 * deadline) or at `maxWaitMs`, so a backlog turns into fast, retryable refusals instead of latency.
 */
export class SandboxPool {
  private readonly queue: AdmissionQueue;
  private readonly maxWaitMs: number;

  constructor(
    private readonly sandbox: Sandbox,
    options: Omit<SandboxPoolOptions, keyof SandboxOptions> = {},
  ) {
    const concurrency = options.concurrency ?? availableParallelism();
    this.queue = new AdmissionQueue(concurrency, options.maxQueued ?? 32, options.retryAfterS ?? 1, {
      code: "sandbox_busy",
      message: "too many programs are waiting for the sandbox; retry later",
    });
    this.maxWaitMs = options.maxWaitMs ?? 10_000;
  }

  /**
   * Checks the sandbox (see `Sandbox.create`; 501 `sandbox_unavailable` when it cannot isolate) and
   * builds a pool, with as many WebAssembly interpreters waiting as jobs may run at once.
   */
  static async create(options: SandboxPoolOptions = {}): Promise<SandboxPool> {
    const warm = options.warm ?? options.concurrency ?? availableParallelism();
    return new SandboxPool(await Sandbox.create({ ...options, warm }), options);
  }

  /** Resolves when every interpreter the pool keeps waiting has booted (at once for bubblewrap). */
  warmed(): Promise<void> {
    return this.sandbox.warmed();
  }

  /** Stops the interpreters that wait for programs; jobs already running finish. */
  close(): void {
    this.sandbox.close();
  }

  /** The isolation in force, for health endpoints and verdicts. */
  get isolation() {
    return this.sandbox.isolation;
  }

  /** Jobs running now, waiting, and refused so far. */
  get stats() {
    return this.queue.stats;
  }

  /** Runs one job when a slot is free; `signal` (e.g. the request's deadline) bounds only the wait. */
  async runProgram(job: ProgramJob, signal?: AbortSignal): Promise<ProgramResult> {
    const waited = AbortSignal.timeout(this.maxWaitMs);
    let release: () => void;
    try {
      release = await this.queue.acquire(signal ? AbortSignal.any([signal, waited]) : waited);
    } catch (err) {
      if (!waited.aborted || signal?.aborted) throw err;
      throw unavailable(
        "sandbox_busy",
        `no sandbox slot came free within ${this.maxWaitMs} ms`,
        this.queue.retryAfterS,
      );
    }
    try {
      return await this.sandbox.run(job);
    } finally {
      release();
    }
  }
}
