/**
 * One call to the GPU nodes with failover: runs on the first candidate, and on the second if the
 * first fails in a way another node could fix (at most two attempts, within the call's timeout
 * from the start). Records per-node counters and what each failure says about its node.
 */
import { DomainError } from "../../shared/errors.js";
import type { GpuNodeClient } from "../../shared/gpu-client.js";
import { classifyFailure, failureText, isShed, noReplica } from "./failures.js";
import { toDomainError } from "./gpu.js";
import type { MetricsBook } from "./node-metrics.js";
import type { RouteTier } from "./placement.js";

/** Where a routed call went. */
export interface Routed<T> {
  result: T;
  nodeId: string;
  /** The tier the route chose (grafts only). */
  tier: RouteTier | null;
  /** Nodes tried, in order (two when the first failed). */
  attempts: { nodeId: string; error?: string; ms: number }[];
}

/** The deadline an attempt must keep: the time left of the call's budget. */
export type AttemptOptions = { deadlineMs: number; signal: AbortSignal };
export type Attempt<T> = (client: GpuNodeClient, opts: AttemptOptions, nodeId: string) => Promise<T>;

export interface FailoverDeps {
  timeoutMs: number;
  /** The heartbeat timing (how long until a node counts as down: the Retry-After of `no_replica`). */
  timing: { heartbeatMs: number; downAfter: number };
  client(nodeId: string): GpuNodeClient;
  metrics: MetricsBook;
  /** The node is unreachable: mark it down. */
  nodeGone(nodeId: string, err: unknown): Promise<void>;
  /** The node is slow, draining or broken: skip it until its next heartbeat. */
  markSuspect(nodeId: string): void;
}

/** Runs one call with failover; `external` is the caller's own abort signal, if any. */
export type FailoverCall = <T>(
  candidates: string[],
  fn: Attempt<T>,
  onLostBlock?: (nodeId: string) => Promise<void>,
  external?: AbortSignal,
) => Promise<Routed<T>>;

const MIN_RETRY_BUDGET_MS = 50;

/** The failover runner of a pool. */
export function createFailover(deps: FailoverDeps): FailoverCall {
  const { timeoutMs } = deps;
  return async (candidates, fn, onLostBlock, external) => {
    const started = performance.now();
    const attempts: Routed<never>["attempts"] = [];
    let lastError: unknown;
    for (const nodeId of candidates.slice(0, 2)) {
      const left = timeoutMs - (performance.now() - started);
      if (attempts.length > 0 && left < MIN_RETRY_BUDGET_MS) break;
      const t0 = performance.now();
      const m = deps.metrics.of(nodeId);
      m.requests++;
      try {
        const opts = {
          deadlineMs: Math.max(1, Math.floor(left)),
          signal: AbortSignal.timeout(Math.max(1, Math.ceil(left))),
        };
        const result = await fn(deps.client(nodeId), opts, nodeId);
        const ms = performance.now() - t0;
        m.latencyMsSum += ms;
        attempts.push({ nodeId, ms });
        return { result, nodeId, tier: null, attempts };
      } catch (err) {
        const ms = performance.now() - t0;
        m.latencyMsSum += ms;
        if (isShed(err)) m.shed++;
        // The caller gave up: not the node's fault, and nobody waits for a retry.
        if (external?.aborted) throw toDomainError(err, timeoutMs);
        const kind = classifyFailure(err);
        attempts.push({ nodeId, ms, error: failureText(err) });
        lastError = err;
        if (kind === "verdict") throw toDomainError(err, timeoutMs);
        if (kind === "lost_block") await onLostBlock?.(nodeId);
        else if (kind === "gone") await deps.nodeGone(nodeId, err);
        else if (kind === "suspect") deps.markSuspect(nodeId);
        m.failovers++;
      }
    }
    if (lastError === undefined) throw noReplica(deps.timing);
    const mapped = toDomainError(lastError, timeoutMs);
    throw new DomainError(
      mapped.status,
      mapped.code,
      mapped.message,
      { ...mapped.details, attempts },
      mapped.retryAfterS,
    );
  };
}
