/**
 * Blocks that reach the GPU node without a deposit: short-lived upload grants for importing a block
 * file straight into the node (or its bucket), and registering such an imported block.
 */
import { type BucketAccess, presignPut, uploadKeys } from "../../shared/bucket-keys.js";
import { DomainError, unavailable } from "../../shared/errors.js";
import { CHUNK_SHA256_HEADER, gpuPaths, LIMITS } from "../../shared/protocol.js";
import { type Block, registerBlock, requireProblem } from "../db/library.js";
import { type AdminDeps, blockInput } from "./admin.service.js";
import { createUploadGrant } from "./upload-grant.js";

/** Registers a block imported straight into the GPU node (after an upload grant), as ready. */
export async function registerImportedBlock(
  deps: AdminDeps,
  input: { problemId: string; sha256: string },
): Promise<Block> {
  await requireProblem(deps.db, input.problemId);
  const manifest = await deps.gpu.getBlock(input.sha256);
  if (manifest.sha256 !== input.sha256)
    throw new DomainError(502, "gpu_bad_response", "The GPU node returned the manifest of another block.");
  return registerBlock(deps.db, blockInput(manifest, input.problemId, deps.config.gpu.nodeId));
}

/**
 * A short-lived grant to import one block file straight into the GPU node (see upload-grant.ts
 * for the token and how the node checks it). The response documents the steps.
 */
export async function issueUploadGrant(
  deps: AdminDeps,
  input: { problemId: string; sha256: string; sizeBytes: number },
  keyId: string,
) {
  const { publicUrl, secret } = deps.config.gpu;
  if (!publicUrl || !secret) throw unavailable("gpu_unavailable", "No GPU node is configured on this edge.");
  await requireProblem(deps.db, input.problemId);
  const exp = Math.floor(deps.clock.now() / 1000) + deps.config.uploads.grantTtlS;
  const jti = [...crypto.getRandomValues(new Uint8Array(16))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
  const grant = await createUploadGrant(secret, { v: 1, jti, exp, keyId, ...input });
  if (deps.config.uploads.bucket)
    return bucketUploadGrant(deps.config.uploads.bucket, {
      grant,
      jti,
      exp,
      ttlS: deps.config.uploads.grantTtlS,
      publicUrl,
      ...input,
    });
  const endpoints = {
    start: `POST ${publicUrl}${gpuPaths.imports}`,
    chunk: `PUT ${publicUrl}${gpuPaths.imports}/{importId}/chunks/{index}`,
    commit: `POST ${publicUrl}${gpuPaths.imports}/{importId}/commit`,
    register: "POST /admin/blocks",
  };
  return {
    grant,
    expiresAt: new Date(exp * 1000).toISOString(),
    nodeUrl: publicUrl,
    chunkBytes: LIMITS.importChunkBytes,
    endpoints,
    steps: [
      `Send 'Authorization: KvgraftUpload <grant>' on every request to the GPU node below; the grant is good for this one block until ${new Date(exp * 1000).toISOString()}.`,
      `${endpoints.start} with JSON {"manifest": <the block's manifest>, "sizeBytes": ${input.sizeBytes}, "chunkBytes": <at most ${LIMITS.importChunkBytes}>}; manifest.sha256 must be ${input.sha256}. The answer holds the importId.`,
      `${endpoints.chunk} for index 0, 1, ... with the raw bytes of each chunk (application/octet-stream) and the header '${CHUNK_SHA256_HEADER}: <hex SHA-256 of the chunk>'.`,
      `${endpoints.commit}: the node hash-checks the file, checks its fingerprints and verifies the probe.`,
      `${endpoints.register} on this edge with {"problemId": "${input.problemId}", "sha256": "${input.sha256}"} to make the block routable.`,
    ],
  };
}

/**
 * The grant's bucket form: presigned PUT URLs for the state and the manifest under
 * `uploads/<grant id>/`, then one call to a GPU node, which verifies and stores the block (and
 * deletes the upload, refused or not), then the registration.
 */
async function bucketUploadGrant(
  bucket: BucketAccess,
  g: {
    grant: string;
    jti: string;
    exp: number;
    ttlS: number;
    publicUrl: string;
    problemId: string;
    sha256: string;
    sizeBytes: number;
  },
) {
  const keys = uploadKeys(g.jti, g.sha256);
  const expiresAt = new Date(g.exp * 1000).toISOString();
  const verify = `POST ${g.publicUrl}${gpuPaths.importFromBucket}`;
  const register = "POST /admin/blocks";
  return {
    grant: g.grant,
    expiresAt,
    nodeUrl: g.publicUrl,
    chunkBytes: LIMITS.importChunkBytes,
    endpoints: {
      start: "PUT <bucket.stateUrl>",
      chunk: "PUT <bucket.manifestUrl>",
      commit: verify,
      register,
    },
    bucket: {
      uploadId: g.jti,
      stateUrl: await presignPut(bucket, keys.state, g.ttlS),
      manifestUrl: await presignPut(bucket, keys.manifest, g.ttlS),
    },
    steps: [
      `PUT the block's state file (${g.sizeBytes} bytes) to bucket.stateUrl, before ${expiresAt}.`,
      `PUT the block's manifest (JSON; sha256 ${g.sha256}) to bucket.manifestUrl, after the state.`,
      `${verify} with 'Authorization: KvgraftUpload <grant>' and JSON {"uploadId": "${g.jti}", "sha256": "${g.sha256}", "sizeBytes": ${g.sizeBytes}}: the node fetches the upload, checks its hashes, fingerprints and probe, stores it in the bucket's blocks/, and deletes the upload (a refused one too).`,
      `${register} on this edge with {"problemId": "${g.problemId}", "sha256": "${g.sha256}"} to make the block routable.`,
    ],
  };
}
