/**
 * Admission control for model work: at most `concurrency` jobs run (one per engine slot) and at
 * most `maxWaiting` wait in FIFO order; one more is refused at once with 429 `queue_full`, so a
 * burst turns into fast, retryable refusals instead of unbounded latency.
 */
import type { GpuErrorCode } from "../../shared/protocol.js";
import { tooManyRequests } from "../errors.js";

/** A bounded queue of model work; `acquire` resolves to a release function. */
export class AdmissionQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private rejectedCount = 0;

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
   * Waits for a free slot. Throws 429 (`queue_full` unless told otherwise) when the wait list is full, or the signal's
   * reason when it aborts while waiting (the job then never runs). Call the returned function
   * when the job ends; later calls are ignored.
   */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.running < this.concurrency) {
      this.running++;
      return this.releaser();
    }
    if (this.waiting.length >= this.maxWaiting) {
      this.rejectedCount++;
      throw tooManyRequests(this.refusal.code, this.refusal.message, this.retryAfterS);
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
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next job, so `running` is unchanged.
      if (next) next();
      else this.running--;
    };
  }
}
