/**
 * Chunked uploads of block files built on another node. A session owns one temp file in its own
 * folder under the data directory (so the block store can rename it into place); chunks are
 * written at their offsets, each checked against its SHA-256, so retries and any order work.
 * Commit checks the whole file's SHA-256 against the manifest before the block service sees it.
 * Whatever ends a session (commit, failure, abort, idle timeout, shutdown) removes its file.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { type FileHandle, open, rm } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import {
  type BlockManifest,
  type engineFingerprintSchema,
  type importStartResultSchema,
  type importStartSchema,
  LIMITS,
  type modelFingerprintSchema,
} from "../../shared/protocol.js";
import { badRequest, conflict, notFound, tooLarge, tooManyRequests, unprocessable } from "../errors.js";

export type ImportStart = z.infer<typeof importStartSchema>;
export type ImportStartResult = z.infer<typeof importStartResultSchema>;

export interface ImportLimits {
  /** Sessions open at once. */
  maxSessions: number;
  /** Largest block file accepted. */
  maxBytes: number;
  /** A session without a chunk for this long is dropped. */
  idleTimeoutMs: number;
}

interface Session {
  id: string;
  path: string;
  file: FileHandle;
  manifest: BlockManifest;
  sizeBytes: number;
  chunkBytes: number;
  chunkCount: number;
  received: Set<number>;
  writes: Set<Promise<unknown>>;
  timer: NodeJS.Timeout;
  state: "open" | "committing" | "ended";
}

export const importIdSchema = z.string().regex(/^[0-9a-f]{32}$/, "expected an import id");

/** Open import sessions of one node. */
export class ImportSessions {
  private readonly sessions = new Map<string, Session>();

  constructor(
    /** A folder of its own: it is emptied at start, removing uploads a crash left behind. */
    readonly dir: string,
    readonly limits: ImportLimits,
    private readonly node: {
      model: z.infer<typeof modelFingerprintSchema>;
      engine: z.infer<typeof engineFingerprintSchema>;
      hasBlock: (sha256: string) => boolean;
    },
  ) {
    // At once, not at the next import (a killed upload can be gigabytes of disk), and before the
    // node answers anything, so that no one sees the folder missing or a stale upload in it.
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true });
  }

  /** Sessions open now. */
  get count(): number {
    return this.sessions.size;
  }

  /** Opens a session after checking that this node could ever accept the block. */
  async start(req: ImportStart): Promise<ImportStartResult> {
    const { manifest, sizeBytes, chunkBytes } = req;
    if (manifest.model.sha256 !== this.node.model.sha256)
      throw conflict("model_mismatch", "the block was made with a different model", {
        expected: this.node.model.sha256,
        got: manifest.model.sha256,
      });
    if (manifest.engine.id !== this.node.engine.id)
      throw conflict("engine_mismatch", "the block was made under a different engine fingerprint", {
        expected: this.node.engine.id,
        got: manifest.engine.id,
      });
    if (this.node.hasBlock(manifest.sha256))
      throw conflict("block_exists", "this node already holds the block", { blockSha256: manifest.sha256 });
    if (sizeBytes !== manifest.sizeBytes)
      throw badRequest(
        "size_mismatch",
        `sizeBytes ${sizeBytes} differs from the manifest's ${manifest.sizeBytes}`,
      );
    if (sizeBytes > this.limits.maxBytes)
      throw tooLarge("import_too_large", `block files over ${this.limits.maxBytes} bytes are not accepted`);
    if (chunkBytes > LIMITS.importChunkBytes)
      throw badRequest("chunk_too_large", `chunkBytes must be at most ${LIMITS.importChunkBytes}`);
    if (this.sessions.size >= this.limits.maxSessions)
      throw tooManyRequests("imports_busy", "too many imports are open; retry later", 5);

    const id = randomBytes(16).toString("hex");
    const path = join(this.dir, `${id}.part`);
    const file = await open(path, "wx", 0o600);
    const session: Session = {
      id,
      path,
      file,
      manifest,
      sizeBytes,
      chunkBytes,
      chunkCount: Math.ceil(sizeBytes / chunkBytes),
      received: new Set(),
      writes: new Set(),
      timer: this.idleTimer(id),
      state: "open",
    };
    this.sessions.set(id, session);
    return {
      importId: id,
      chunkBytes,
      chunkCount: session.chunkCount,
      idleTimeoutS: Math.ceil(this.limits.idleTimeoutMs / 1000),
    };
  }

  /** Writes chunk `index` after checking its size and SHA-256; writing a chunk twice is allowed. */
  async putChunk(
    id: string,
    index: number,
    bytes: Uint8Array,
    claimedSha256: string | undefined,
  ): Promise<{ index: number; received: number; chunkCount: number }> {
    const s = this.open(id);
    if (!Number.isInteger(index) || index < 0 || index >= s.chunkCount)
      throw badRequest("chunk_out_of_range", `chunk index must be in [0, ${s.chunkCount})`);
    const expected =
      index < s.chunkCount - 1 ? s.chunkBytes : s.sizeBytes - s.chunkBytes * (s.chunkCount - 1);
    if (bytes.length !== expected)
      throw badRequest(
        "chunk_size_mismatch",
        `chunk ${index} must be ${expected} bytes, got ${bytes.length}`,
      );
    if (!claimedSha256 || !/^[0-9a-f]{64}$/.test(claimedSha256))
      throw badRequest(
        "chunk_hash_missing",
        "x-kvgraft-chunk-sha256 must be the chunk's lower-case hex SHA-256",
      );
    const actual = createHash("sha256").update(bytes).digest("hex");
    if (actual !== claimedSha256)
      throw unprocessable("chunk_hash_mismatch", `chunk ${index} does not match its SHA-256`, {
        expected: claimedSha256,
        actual,
      });
    s.timer.refresh();
    // A short write to a regular file means the disk is full: never acknowledge a partial chunk.
    const write = s.file.write(bytes, 0, bytes.length, index * s.chunkBytes).then(({ bytesWritten }) => {
      if (bytesWritten !== bytes.length)
        throw Object.assign(new Error(`short write: ${bytesWritten} of ${bytes.length} bytes`), {
          code: "ENOSPC",
        });
    });
    s.writes.add(write);
    try {
      await write;
    } finally {
      s.writes.delete(write);
    }
    s.received.add(index);
    return { index, received: s.received.size, chunkCount: s.chunkCount };
  }

  /** Throws 409 `import_incomplete` unless every chunk arrived. */
  assertComplete(id: string): void {
    const s = this.open(id);
    if (s.received.size === s.chunkCount) return;
    const missing: number[] = [];
    for (let i = 0; i < s.chunkCount && missing.length < 20; i++) if (!s.received.has(i)) missing.push(i);
    throw conflict("import_incomplete", `${s.chunkCount - s.received.size} chunks are missing`, { missing });
  }

  /**
   * Hands the complete file to `accept` (the block service's import, which checks its SHA-256,
   * fingerprints and probe); the session and its file are gone afterwards whatever happens.
   */
  async commit(id: string, accept: (path: string, manifest: BlockManifest) => Promise<BlockManifest>) {
    this.assertComplete(id);
    const s = this.open(id);
    s.state = "committing";
    clearTimeout(s.timer);
    try {
      await Promise.allSettled(s.writes);
      await s.file.sync();
      await s.file.close();
      return await accept(s.path, s.manifest);
    } finally {
      await this.end(s);
    }
  }

  /** Drops a session and its file; unknown ids are a 404. */
  async abort(id: string): Promise<void> {
    await this.end(this.open(id));
  }

  /** Drops every session (shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((s) => this.end(s)));
  }

  private open(id: string): Session {
    const s = this.sessions.get(id);
    if (!s || s.state === "ended") throw notFound("import_not_found", `no open import ${id}`);
    if (s.state === "committing") throw conflict("import_committing", `import ${id} is being committed`);
    return s;
  }

  private idleTimer(id: string): NodeJS.Timeout {
    const timer = setTimeout(() => {
      const s = this.sessions.get(id);
      if (s?.state === "open") void this.end(s);
    }, this.limits.idleTimeoutMs);
    timer.unref();
    return timer;
  }

  private async end(s: Session): Promise<void> {
    if (s.state === "ended") return;
    s.state = "ended";
    clearTimeout(s.timer);
    this.sessions.delete(s.id);
    await Promise.allSettled(s.writes);
    await s.file.close().catch(() => undefined);
    await rm(s.path, { force: true });
  }
}
