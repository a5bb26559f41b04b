/**
 * The error codes a GPU node answers with, declared once (re-exported by shared/protocol.ts). The
 * node throws only through gpu-node/errors.ts, whose helpers take a `GpuErrorCode`, so a code not
 * listed here does not compile there (test/gpu-error-codes.test.ts scans the node's throws too);
 * the edge reads the node's codes from this enum (edge/cluster/gpu-failure.ts), never as bare
 * strings.
 */
import { z } from "zod";

export const gpuErrorCodeSchema = z.enum([
  // Requests, signatures and tokens (the node's HTTP toolkit, shared/http/, and its access gates).
  "invalid_request",
  "invalid_json",
  "body_too_large",
  "http_error",
  "not_found",
  "internal_error",
  "signature_missing",
  "signature_malformed",
  "signature_skewed",
  "signature_replayed",
  "signature_invalid",
  "body_hash_mismatch",
  "access_token_missing",
  "access_token_invalid",
  "access_keys_unavailable",
  "grant_malformed",
  "grant_invalid",
  "grant_expired",
  "grant_scope",
  "grant_mismatch",
  // Model work: deadlines, load, the node's own state.
  "invalid_deadline",
  "deadline_exceeded",
  "client_closed",
  "shutting_down",
  "draining",
  "queue_full",
  // A background solve waited for other model work to end for half its deadline (foreground.ts).
  "background_deferred",
  "no_slots",
  "context_overflow",
  "block_too_long",
  // Blocks: lookup, checks and quarantine (`block_corrupt`, `block_probe_mismatch`), fingerprints.
  "invalid_block_id",
  "block_not_found",
  "block_exists",
  "block_corrupt",
  "block_probe_mismatch",
  "block_invalid",
  "block_unverified",
  "probe_mismatch",
  "state_incompatible",
  "model_mismatch",
  "engine_mismatch",
  "manifest_mismatch",
  "isolated_load_unavailable",
  "file_unavailable",
  // Chunked imports.
  "size_mismatch",
  "import_too_large",
  "imports_busy",
  "import_not_found",
  "import_committing",
  "import_incomplete",
  "import_hash_mismatch",
  "chunk_too_large",
  "chunk_out_of_range",
  "chunk_size_mismatch",
  "chunk_hash_missing",
  "chunk_hash_mismatch",
  // The block bucket.
  "bucket_unavailable",
  "bucket_block_corrupt",
  "bucket_not_configured",
  "upload_not_found",
  "upload_mismatch",
  // The node's disk.
  "disk_full",
  "storage_write_failed",
  "nonce_log_full",
  // The sandbox.
  "sandbox_unavailable",
  "sandbox_busy",
  "invalid_params",
  "invalid_limits",
  "invalid_program",
  "program_too_large",
  // Not the node's: the signed client's own, when an answer does not match the protocol.
  "gpu_bad_response",
]);
export type GpuErrorCode = z.infer<typeof gpuErrorCodeSchema>;

/** The codes by name (`GPU_ERROR.block_corrupt`), for code that reads them. */
export const GPU_ERROR = gpuErrorCodeSchema.enum;
