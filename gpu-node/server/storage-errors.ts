/** Failed writes to the node's disk, as clear errors instead of a generic 500. */
import type { DomainError } from "../../shared/errors.js";
import { nodeError } from "../errors.js";

/**
 * ENOSPC/EDQUOT from Node's fs (manifests, import chunks) is `disk_full`; llama.cpp reports a
 * failed state save without its errno, so that one is `storage_write_failed`. Both answer 507
 * (Insufficient Storage). Anything else: null.
 */
export function storageFailure(err: unknown): DomainError | null {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === "ENOSPC" || code === "EDQUOT")
    return nodeError(507, "disk_full", "the node's disk is full; nothing was stored");
  if (err instanceof Error && /failed to save state to file/i.test(err.message))
    return nodeError(
      507,
      "storage_write_failed",
      "the node could not write the block's state file (disk full or I/O error); nothing was stored",
    );
  return null;
}
