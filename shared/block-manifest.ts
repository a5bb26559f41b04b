/**
 * Block manifests are built here and nowhere else: the fields a block's maker knows (the block
 * service's deposit, the benchmarks, the tests' made-up blocks), to which the block store adds
 * the state file's SHA-256, size and chunk hashes when it commits the file, or a whole manifest
 * once the file is hashed. The format version is set here, `createdAt` defaults to now.
 */
import { BLOCK_FORMAT_VERSION, type BlockManifest, blockManifestSchema } from "./protocol.js";

/** A manifest without what its state file's bytes give: the SHA-256 (the block id), the size, the chunk hashes. */
export type ManifestFields = Omit<BlockManifest, "sha256" | "sizeBytes" | "chunks">;

/** What the maker of a block knows about it. */
export type BlockOrigin = Omit<ManifestFields, "formatVersion" | "createdAt"> & { createdAt?: string };

/** What a hashed state file adds to the manifest. */
export type StateFileHash = Pick<BlockManifest, "sha256" | "sizeBytes" | "chunks">;

/** The manifest's fields for a block about to be committed (`BlockStore.commit` hashes the file). */
export function manifestFields(origin: BlockOrigin): ManifestFields {
  const { createdAt, ...known } = origin;
  return { formatVersion: BLOCK_FORMAT_VERSION, ...known, createdAt: createdAt ?? new Date().toISOString() };
}

/** A whole manifest, for a state file hashed already; checked against the schema. */
export function blockManifest(origin: BlockOrigin, file: StateFileHash): BlockManifest {
  return blockManifestSchema.parse({ ...manifestFields(origin), ...file });
}
