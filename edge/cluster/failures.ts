/**
 * What a failed GPU call says about the node and the request, so the pool knows whether to retry
 * elsewhere, skip the node for a while, mark it down, or pass the verdict to the client.
 */
import { DomainError } from "../../shared/errors.js";
import { GpuError } from "../../shared/gpu-client.js";

/**
 * `verdict` (about the request: no retry), `lost_block` (the node lacks the block), `retry`
 * (another node may do it: queue full, no sandbox), `suspect` (the node is slow, draining or
 * broken: skip it until its next heartbeat), `gone` (unreachable: mark it down).
 */
export type FailureKind = "gone" | "suspect" | "retry" | "lost_block" | "verdict";

/** Classifies a failed call to a GPU node. */
export function classifyFailure(err: unknown): FailureKind {
  if (err instanceof GpuError) {
    if (err.status === 404 && err.code === "block_not_found") return "lost_block";
    if (err.status === 429 || err.code === "queue_full" || err.code === "sandbox_unavailable") return "retry";
    if (err.status >= 500) return "suspect";
    return "verdict";
  }
  if (err instanceof DomainError) return err.status >= 500 ? "suspect" : "verdict";
  const name = err instanceof Error ? err.name : "";
  if (name === "TimeoutError" || name === "AbortError") return "suspect";
  // fetch rejects with a TypeError when the node cannot be reached (refused, reset, DNS).
  if (err instanceof TypeError) return "gone";
  return "suspect";
}

/** Whether the node refused the call for load (its queue was full): a shed request. */
export function isShed(err: unknown): boolean {
  return err instanceof GpuError && (err.status === 429 || err.code === "queue_full");
}

/** 503 `no_replica`: no live node can take the call; retry after the time a node needs to be marked down. */
export function noReplica(timing: { heartbeatMs: number; downAfter: number }, blockId?: string): DomainError {
  return new DomainError(
    503,
    "no_replica",
    blockId ? "No GPU node that holds this block is reachable now." : "No GPU node is reachable now.",
    blockId ? { blockId } : undefined,
    Math.max(1, Math.ceil((timing.heartbeatMs * timing.downAfter) / 1000)),
  );
}

/** A failure's one-line description for logs and attempt lists. */
export const failureText = (err: unknown): string =>
  err instanceof Error ? `${err.name}: ${err.message}` : String(err);
