/**
 * Background model work (the flywheel's solves, `priority: "background"`) yields to all other
 * model work on the node. On a small machine two jobs share the same cores, so a user's solve
 * beside a flywheel sample took up to twice as long (docs/model.md, playground latency): now a
 * background job starts only while no other model job runs or waits, and one that is running
 * when another arrives is stopped and run again from its start once the node is free of other
 * work. Its samples are seeded, so the rerun gives the same answer; what a preemption costs is
 * the part already done. A job waits at most half its deadline in all (the node then answers 429
 * `background_deferred`, well before the caller's own timeout, which would count against the node).
 */

/** The abort reason of a background job stopped for other work; never leaves this module. */
class Preempted extends Error {
  constructor() {
    super("preempted by other model work");
  }
}

/** A background job gave up waiting for the node to be free of other work. */
export class BackgroundDeferred extends Error {
  constructor() {
    super("background work waited for other model work to end");
  }
}

export class ForegroundGate {
  /** Other (foreground) model jobs admitted or waiting for admission. */
  private active = 0;
  /** Abort controllers of the background jobs running now. */
  private readonly running = new Set<AbortController>();
  /** Background jobs waiting for the node to be free of other work. */
  private readonly waiters = new Set<() => void>();
  private preemptedCount = 0;

  /**
   * Marks foreground work from now until the returned function is called (later calls are
   * ignored), and stops every background job that runs now.
   */
  enter(): () => void {
    this.active++;
    for (const controller of this.running) controller.abort(new Preempted());
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.active--;
      if (this.active === 0) for (const wake of [...this.waiters]) wake();
    };
  }

  /**
   * Runs `job` as background work: when no foreground work is active, with a signal that aborts
   * on `signal` or on a preemption; a preempted run is started again. Rejects with `signal`'s
   * reason when it aborts, with `BackgroundDeferred` when `patience` aborts while it waits (never
   * while it runs), and with the job's own errors.
   */
  async yielding<T>(
    signal: AbortSignal,
    patience: AbortSignal,
    job: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    while (true) {
      await this.free(AbortSignal.any([signal, patience])).catch((err: unknown) => {
        throw signal.aborted ? err : new BackgroundDeferred();
      });
      // Foreground work may have arrived in the turn since the node was free: wait again.
      if (this.active > 0) continue;
      const controller = new AbortController();
      this.running.add(controller);
      let result: T;
      try {
        result = await job(AbortSignal.any([signal, controller.signal]));
      } catch (err) {
        if (signal.aborted || !(controller.signal.reason instanceof Preempted)) throw err;
        this.preemptedCount++;
        continue;
      } finally {
        this.running.delete(controller);
      }
      // A job may end normally after the abort (a solve whose programs the abort cut answers
      // with their errors): whatever a preempted run gave is thrown away.
      if (!(controller.signal.reason instanceof Preempted)) return result;
      signal.throwIfAborted();
      this.preemptedCount++;
    }
  }

  /** Background jobs running, waiting, and preempted since start. */
  get stats(): { running: number; waiting: number; preempted: number } {
    return { running: this.running.size, waiting: this.waiters.size, preempted: this.preemptedCount };
  }

  /** Resolves once no foreground work is active; rejects when `signal` aborts first. */
  private free(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.active === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        this.waiters.delete(wake);
        signal.removeEventListener("abort", onAbort);
      };
      const wake = () => {
        done();
        resolve();
      };
      const onAbort = () => {
        done();
        reject(signal.reason);
      };
      this.waiters.add(wake);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}
