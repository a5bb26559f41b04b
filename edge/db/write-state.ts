/**
 * What this edge process saw of the database's writes: the query-log lines it dropped (a storage
 * condition must not fail an answer that is already computed) and the last write a storage
 * condition refused. /health reports both; /admin/nodes/metrics counts the drops.
 */
import type { Logger } from "../../shared/http/logger.js";
import { type DatabaseWriteCondition, databaseWriteCondition } from "./availability.js";

/** How long a refused write keeps /health saying "not writable" after its probe write succeeds. */
export const REFUSAL_MEMORY_MS = 60_000;

export class DatabaseWrites {
  /** Query-log lines not written since this process started. */
  droppedLogLines = 0;
  private refusal: { condition: DatabaseWriteCondition; atMs: number } | null = null;

  constructor(private readonly now: () => number) {}

  /** Records `err` when it is a write refused by a storage condition; returns the condition. */
  refused(err: unknown): DatabaseWriteCondition | null {
    const condition = databaseWriteCondition(err);
    if (condition) this.refusal = { condition, atMs: this.now() };
    return condition;
  }

  /**
   * The condition of a write refused in the last REFUSAL_MEMORY_MS, else null: a nearly full disk
   * takes a small probe write and still refuses a larger one, so a real refusal counts too.
   */
  recentRefusal(): { condition: DatabaseWriteCondition; agoS: number } | null {
    if (!this.refusal) return null;
    const agoMs = this.now() - this.refusal.atMs;
    return agoMs < REFUSAL_MEMORY_MS
      ? { condition: this.refusal.condition, agoS: Math.round(agoMs / 1000) }
      : null;
  }

  /**
   * Runs a log write; when it fails, the line is dropped and counted (and logged), never thrown:
   * the answer it describes was already computed. Returns the write's value, or null when dropped.
   */
  async logOrDrop<T>(logger: Logger, what: string, write: () => Promise<T>): Promise<T | null> {
    try {
      return await write();
    } catch (err) {
      this.droppedLogLines++;
      const condition = this.refused(err);
      logger.warn("log line dropped", { what, condition, error: err });
      return null;
    }
  }
}

/** The drop counter in the Prometheus text format, appended to /admin/nodes/metrics. */
export function renderWriteMetrics(writes: DatabaseWrites): string {
  const name = "kvgraft_edge_query_log_dropped_total";
  return [
    `# HELP ${name} Query-log lines not written (the database refused the write) and dropped.`,
    `# TYPE ${name} counter`,
    `${name} ${writes.droppedLogLines}`,
    "",
  ].join("\n");
}
