/**
 * Imports of blocks an admin uploaded to the bucket through presigned URLs (the edge's upload
 * grant): the node reads the upload's manifest, fetches its state hash-checked, verifies it as
 * any import (fingerprints, state layout, a load in a disposable process, the probe), stores it
 * locally and under `blocks/`, then deletes the upload's objects. A refused upload is deleted
 * too, so nothing unverified stays; one that failed only because the bucket could not be reached
 * stays, for a retry.
 */
import { rm } from "node:fs/promises";
import { uploadKeys } from "../../../shared/bucket-keys.js";
import { DomainError } from "../../../shared/errors.js";
import type { BlockManifest } from "../../../shared/protocol.js";
import { conflict, notFound } from "../../errors.js";
import type { BlockStore } from "../store/block-store.js";
import type { DiskCache } from "./disk-cache.js";
import { fileDestination } from "./fetch-file-destination.js";

/** Which upload to import: its id (the grant's) and the block it must be, at its size. */
export interface BucketUpload {
  uploadId: string;
  sha256: string;
  sizeBytes: number;
}

/** What an import from the bucket uses of the block service. */
export interface BucketImportDeps {
  store: BlockStore;
  disk: DiskCache;
  /** Checks and stores a block file (removing the file): BlockService.importFile. */
  importFile(tempPath: string, manifest: BlockManifest): Promise<BlockManifest>;
}

/**
 * Verifies and stores an uploaded block, then makes it durable under `blocks/`. 404
 * `upload_not_found` without its manifest; 409 `bucket_block_corrupt`, `import_hash_mismatch`,
 * `upload_mismatch` and the import's own refusals delete the upload.
 */
export async function importFromBucket(deps: BucketImportDeps, upload: BucketUpload): Promise<BlockManifest> {
  const bucket = deps.disk.bucket;
  if (!bucket) throw conflict("bucket_not_configured", "this GPU node has no bucket to import from");
  const keys = uploadKeys(upload.uploadId, upload.sha256);
  const temp = deps.store.tempPath("bucket-import");
  try {
    // An admin's manifest has no node's tag: the fetch checks the whole state's SHA-256.
    const manifest = (await bucket.manifestAt(keys.manifest, upload.sha256))?.manifest;
    if (!manifest)
      throw notFound("upload_not_found", `no uploaded manifest at ${keys.manifest}; PUT it after the state`);
    if (manifest.sizeBytes !== upload.sizeBytes)
      throw conflict(
        "upload_mismatch",
        `the manifest says ${manifest.sizeBytes} bytes, the grant ${upload.sizeBytes}`,
      );
    await bucket.download(manifest, fileDestination(temp), { key: keys.state });
    const stored = await deps.importFile(temp, manifest);
    await deps.disk.makeDurable(stored);
    await bucket.delete([keys.manifest, keys.state]);
    return stored;
  } catch (err) {
    // A verdict on the bytes (not a reachability fault, not a missing manifest): nothing of it stays.
    const refused = err instanceof DomainError && err.status >= 400 && err.status < 500 && err.status !== 404;
    if (refused) await bucket.delete([keys.manifest, keys.state]).catch(() => undefined);
    throw err;
  } finally {
    await rm(temp, { force: true });
  }
}
