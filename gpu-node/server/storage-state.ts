/**
 * The node's storage as /health reports it: the data directory's free bytes, the nonce log's
 * state (nonce-log.ts), and the last write the disk refused (a deposit's 507, say).
 */
import { statfsSync } from "node:fs";
import type { DomainError } from "../../shared/errors.js";
import type { StorageHealth } from "../../shared/protocol.js";
import type { NonceLog } from "./nonce-log.js";

/** How long a refused write keeps the storage `failing` (a later write may find room, or not). */
const FAILURE_MEMORY_MS = 60_000;

export class StorageState {
  private failure: { code: string; atMs: number } | null = null;

  constructor(
    private readonly dataDir: string,
    readonly nonces: NonceLog,
  ) {}

  /** Records a write the disk refused (a storage DomainError, mapped by storage-errors.ts). */
  failed(err: DomainError): void {
    this.failure = { code: err.code, atMs: Date.now() };
  }

  /**
   * `failing` when the file system has no byte left for the node, the nonce log cannot persist
   * every nonce, or a write was refused in the last minute; else `ok`.
   */
  health(now = Date.now()): StorageHealth {
    let freeBytes: number | null = null;
    try {
      const fs = statfsSync(this.dataDir);
      freeBytes = fs.bavail * fs.bsize;
    } catch {
      // No file system figure (the directory is gone, say): the other signals still count.
    }
    const recent = this.failure && now - this.failure.atMs < FAILURE_MEMORY_MS ? this.failure : null;
    const nonceLog = this.nonces.state(now);
    return {
      status: freeBytes === 0 || nonceLog !== "ok" || recent ? "failing" : "ok",
      freeBytes,
      nonceLog,
      lastFailure: recent ? { code: recent.code, agoS: Math.round((now - recent.atMs) / 1000) } : null,
    };
  }
}
