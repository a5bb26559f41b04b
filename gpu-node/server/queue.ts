/**
 * Admission control for model work: at most `concurrency` jobs run (one per engine slot) and at
 * most `maxWaiting` wait in FIFO order; one more is refused at once with 429 `queue_full`, so a
 * burst turns into fast, retryable refusals instead of unbounded latency. A job with a deadline is
 * refused the same way when, at the mean time a job has held its place so far, the jobs ahead of
 * it and its own would take longer than that: it would be cut before its end, and the slot time
 * it took would be lost to the jobs behind it (the fifth serve round, docs/benchmarks.md).
 */
import type { GpuErrorCode } from "../../shared/protocol.js";
import { tooManyRequests } from "../errors.js";

/** A bounded queue of model work; `acquire` resolves to a release function. */
export class AdmissionQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private rejectedCount = 0;
  /** Mean milliseconds from admission to release (a moving average); 0 until a job has ended. */
  private serviceMs = 0;

  constructor(
    readonly concurrency: number,
    readonly maxWaiting: number,
    /** Retry-After sent with a refusal. */
    readonly retryAfterS = 1,
    /** Code and message of the 429 refusal (the sandbox's queue says `sandbox_busy`). */
    private readonly refusal: { code: GpuErrorCode; message: string } = {
      code: "queue_full",
      message: "the model work queue is full; retry later",
    },
  ) {
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new RangeError(`queue concurrency must be a positive integer, got ${concurrency}`);
    if (!Number.isInteger(maxWaiting) || maxWaiting < 0)
      throw new RangeError(`queue maxWaiting must be a non-negative integer, got ${maxWaiting}`);
  }

  /** Jobs running plus jobs waiting. */
  get depth(): number {
    return this.running + this.waiting.length;
  }

  /** The depth at which the next job is refused. */
  get capacity(): number {
    return this.concurrency + this.maxWaiting;
  }

  get stats(): { running: number; waiting: number; rejected: number } {
    return { running: this.running, waiting: this.waiting.length, rejected: this.rejectedCount };
  }

  /**
   * How long a job queued now would wait before it starts, from the mean time a job has held its
   * place (0 while a place is free or before any job has ended).
   */
  expectedWaitMs(): number {
    if (this.running < this.concurrency) return 0;
    return ((this.waiting.length + 1) * this.serviceMs) / this.concurrency;
  }

  /**
   * Waits for a free slot. Throws 429 (`queue_full` unless told otherwise) when the wait list is
   * full or, given `deadlineMs`, when the expected wait and a mean job are longer; or the signal's
   * reason when it aborts while waiting (the job then never runs). Call the returned function
   * when the job ends; later calls are ignored.
   */
  async acquire(signal?: AbortSignal, deadlineMs?: number): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.running < this.concurrency) {
      this.running++;
      return this.releaser();
    }
    if (this.waiting.length >= this.maxWaiting) {
      this.rejectedCount++;
      throw tooManyRequests(this.refusal.code, this.refusal.message, this.retryAfterS);
    }
    const expectedMs = this.expectedWaitMs() + this.serviceMs;
    if (deadlineMs !== undefined && expectedMs > deadlineMs) {
      this.rejectedCount++;
      throw tooManyRequests(
        this.refusal.code,
        `the model work ahead and this request's own would take ~${Math.round(expectedMs)} ms, longer than its deadline of ${deadlineMs} ms; retry later`,
        Math.max(this.retryAfterS, Math.ceil(expectedMs / 1000)),
      );
    }
    await new Promise<void>((resolve, reject) => {
      const admit = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(admit);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(admit);
    });
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    const admitted = performance.now();
    return () => {
      if (released) return;
      released = true;
      const heldMs = performance.now() - admitted;
      this.serviceMs = this.serviceMs === 0 ? heldMs : 0.9 * this.serviceMs + 0.1 * heldMs;
      const next = this.waiting.shift();
      // The slot passes straight to the next job, so `running` is unchanged.
      if (next) next();
      else this.running--;
    };
  }
}
