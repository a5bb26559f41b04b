/**
 * What a failed call to a GPU node means, decided once: `gpuFailure` maps whatever the call threw
 * (the node's GpuError with a code of shared/gpu-errors.ts, a timeout, a refused connection, an
 * answer off the protocol) to its kind, which the pool's failover acts on (edge/cluster/pool-calls.ts),
 * and to the edge's own DomainError, which the caller is answered with. The node's codes are read
 * from the enum (`GPU_ERROR`), never as bare strings.
 *
 * The edge errors: connection refused or a node that cannot take work -> 503 `gpu_unavailable`
 * (with Retry-After), a node that runs no programs -> 501 `sandbox_unavailable` (permanent: no
 * Retry-After), a full disk -> 503 `gpu_storage_full`, timeout -> 504 `gpu_timeout`, an answer the
 * edge cannot use -> 502 `gpu_bad_response`; the node's own 4xx verdicts about the request (404
 * `block_not_found`, 409, 413, 422) keep their status and code.
 */
import { ZodError } from "zod";
import { DomainError } from "../../shared/errors.js";
import { GpuError } from "../../shared/gpu-client.js";
import { GPU_ERROR } from "../../shared/protocol.js";

/**
 * `verdict` (about the request: no retry), `lost_block` (the node lacks the block, or its copy
 * failed a check), `retry` (another node may do it: queue full, no sandbox), `suspect` (the node is
 * slow, draining or broken: skip it until its next heartbeat), `gone` (unreachable: mark it down).
 */
export type FailureKind = "gone" | "suspect" | "retry" | "lost_block" | "verdict";

/** A failed GPU call: what it says about the node, whether it was shed for load, and the edge's error. */
export interface GpuFailure {
  kind: FailureKind;
  /** The node refused the call for load (its queue was full). */
  shed: boolean;
  error: DomainError;
}

/** Codes of a block copy that failed its hash or probe check: the node quarantined it. */
const QUARANTINED = new Set<string>([GPU_ERROR.block_corrupt, GPU_ERROR.block_probe_mismatch]);

/** Upstream statuses whose verdict is about the request and passes through unchanged. */
const PASS_THROUGH = new Set([400, 404, 409, 413, 422]);

/** Maps a failed GPU call (`timeoutMs`: the budget it had, for the message) to its kind and edge error. */
export function gpuFailure(err: unknown, timeoutMs: number): GpuFailure {
  return { kind: kindOf(err), shed: isShed(err), error: edgeError(err, timeoutMs) };
}

/**
 * Whether an error the edge got from the pool says the node found the block damaged and
 * quarantined it (every holder's copy failed, or the only one did): the library stops routing to it.
 */
export function quarantinedByNode(err: unknown): boolean {
  return err instanceof DomainError && QUARANTINED.has(err.code);
}

function isShed(err: unknown): boolean {
  return err instanceof GpuError && (err.status === 429 || err.code === GPU_ERROR.queue_full);
}

function kindOf(err: unknown): FailureKind {
  if (err instanceof GpuError) {
    if (err.status === 404 && err.code === GPU_ERROR.block_not_found) return "lost_block";
    // That node's copy failed its hash or probe check and the node quarantined it: another
    // holder's copy may be sound, so it is that replica that is lost, not (yet) the block.
    if (QUARANTINED.has(err.code)) return "lost_block";
    if (err.status === 429 || err.code === GPU_ERROR.queue_full || err.code === GPU_ERROR.sandbox_unavailable)
      return "retry";
    if (err.status >= 500) return "suspect";
    return "verdict";
  }
  if (err instanceof DomainError) return err.status >= 500 ? "suspect" : "verdict";
  const name = err instanceof Error ? err.name : "";
  if (name === "TimeoutError" || name === "AbortError") return "suspect";
  // fetch rejects when the node cannot be reached (refused, reset, DNS): with a TypeError in Node,
  // with a plain Error saying so in workerd (the Worker entry).
  if (err instanceof TypeError) return "gone";
  if (err instanceof Error && err.message.startsWith("Network connection lost")) return "gone";
  return "suspect";
}

function edgeError(err: unknown, timeoutMs: number): DomainError {
  // A GpuError is a DomainError too, but the node's; it is mapped to the edge's own here.
  if (err instanceof GpuError) {
    const details = { upstreamStatus: err.status, upstreamCode: err.code };
    // The node runs no programs (its sandbox backend cannot start there): the feature says so, not
    // a busy GPU, and waiting will not change it, so there is no Retry-After.
    if (err.code === GPU_ERROR.sandbox_unavailable)
      return new DomainError(
        501,
        "sandbox_unavailable",
        "The GPU node runs no programs (its sandbox cannot start there; its /health says why), so it cannot do this.",
        details,
      );
    if (err.status === 429 || err.status === 503)
      return new DomainError(
        503,
        "gpu_unavailable",
        `The GPU node cannot take the request now (${err.code}).`,
        details,
        Math.max(1, Math.ceil(err.retryAfterS ?? 5)),
      );
    if (err.status === 507)
      return new DomainError(
        503,
        "gpu_storage_full",
        "The GPU node cannot store blocks now (its disk is full).",
        details,
        60,
      );
    if (err.status === 504)
      return new DomainError(504, "gpu_timeout", "The GPU node ran out of time.", details);
    if (PASS_THROUGH.has(err.status) && err.code !== GPU_ERROR.gpu_bad_response)
      return new DomainError(err.status as 400 | 404 | 409 | 413 | 422, err.code, err.message, err.details);
    return new DomainError(502, "gpu_bad_response", `The GPU node answered HTTP ${err.status}.`, details);
  }
  if (err instanceof DomainError) return err;
  if (err instanceof ZodError || err instanceof SyntaxError)
    return new DomainError(502, "gpu_bad_response", "The GPU node's answer does not match the protocol.", {
      issues:
        err instanceof ZodError
          ? err.issues.slice(0, 5).map((i) => `${i.path.join(".")}: ${i.message}`)
          : [err.message],
    });
  const name = err instanceof Error ? err.name : "";
  if (name === "TimeoutError" || name === "AbortError")
    return new DomainError(504, "gpu_timeout", `The GPU node did not answer within ${timeoutMs} ms.`);
  // fetch failed: connection refused, reset, DNS, TLS: the node cannot be reached.
  return new DomainError(503, "gpu_unavailable", "The GPU node cannot be reached.", undefined, 5);
}
