/**
 * The edge-to-GPU-node protocol, defined once and used by both sides: request and response
 * bodies as zod schemas, with the paths they travel on.
 */
import { z } from "zod";
import { type ProgramParam, programParamSchema } from "./params.js";
import type { SolveResult } from "./solve-protocol.js";

export const sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, "expected a lower-case hex SHA-256");

/** Paths of the GPU node's API. */
export const gpuPaths = {
  health: "/health",
  metrics: "/metrics",
  blocks: "/v1/blocks",
  block: (id: string) => `/v1/blocks/${id}`,
  verifyBlock: (id: string) => `/v1/blocks/${id}/verify`,
  prefetch: (id: string) => `/v1/blocks/${id}/prefetch`,
  graft: "/v1/graft",
  generate: "/v1/generate",
  imports: "/v1/imports",
  importChunk: (id: string, index: number) => `/v1/imports/${id}/chunks/${index}`,
  importCommit: (id: string) => `/v1/imports/${id}/commit`,
  /** DELETE aborts an import and removes what it uploaded. */
  importSession: (id: string) => `/v1/imports/${id}`,
  /** POST: verify and store a block an admin uploaded to the bucket through presigned URLs. */
  importFromBucket: "/v1/imports/bucket",
  sandboxRun: "/v1/sandbox/run",
  solve: "/v1/solve",
} as const;

export const modelFingerprintSchema = z.object({
  sha256: sha256Schema,
  sizeBytes: z.number().int().nonnegative(),
  architecture: z.string(),
  name: z.string(),
});

export const engineFingerprintSchema = z.object({
  nodeLlamaCpp: z.string(),
  llamaCppRelease: z.string(),
  /** kvgraft's engine build or node-llama-cpp's npm binaries (absent in manifests made before it was recorded). */
  build: z.enum(["kvgraft", "npm"]).optional(),
  backend: z.string(),
  gpuName: z.string().nullable(),
  computeCapability: z.string().nullable(),
  context: z.object({
    kvKeyType: z.string(),
    kvValueType: z.string(),
    flashAttention: z.boolean(),
    swaFullCache: z.boolean(),
    batchSize: z.number().int(),
    sequences: z.number().int(),
  }),
  id: sha256Schema,
});

export const BLOCK_FORMAT_VERSION = 1;

/** A block's manifest: what the state file holds and what it was made under. */
export const blockManifestSchema = z.object({
  formatVersion: z.literal(BLOCK_FORMAT_VERSION),
  /** SHA-256 of the state file's bytes; also the block id and file name. */
  sha256: sha256Schema,
  sizeBytes: z.number().int().positive(),
  tokenCount: z.number().int().positive(),
  tokensSha256: sha256Schema,
  textSha256: sha256Schema,
  model: modelFingerprintSchema,
  engine: engineFingerprintSchema,
  /** One decode step after restore must reproduce this probability-vector hash. */
  probe: z.object({ token: z.number().int().nonnegative(), sha256: sha256Schema }),
  /** SHA-256 of each `bytes`-sized chunk of the state file, so reads can check it in parallel. */
  chunks: z.object({ bytes: z.number().int().positive(), sha256: z.array(sha256Schema).min(1) }).optional(),
  createdAt: z.string(),
});
export type BlockManifest = z.infer<typeof blockManifestSchema>;

/**
 * A GPU node's answer to a deposit: the manifest, and `durable: true` when the node keeps
 * blocks in a bucket and this one was uploaded (state, then manifest) before the answer; a node
 * whose upload fails answers 503 `bucket_unavailable` instead. False: the node has no bucket.
 */
export const depositResultSchema = blockManifestSchema.extend({ durable: z.boolean().default(false) });
export type DepositResult = z.infer<typeof depositResultSchema>;

export const tierSchema = z.enum(["hot", "warm", "cold"]);
export type Tier = z.infer<typeof tierSchema>;

/** Limits on what one request may ask for. */
export const LIMITS = {
  depositTextChars: 400_000,
  queryChars: 20_000,
  maxTokens: 4096,
  importChunkBytes: 8 * 2 ** 20,
  programChars: 100_000,
} as const;

export const samplingSchema = z
  .object({
    /** 0 decodes greedily. */
    temperature: z.number().min(0).max(2).default(0),
    topK: z.number().int().min(1).max(1000).optional(),
    topP: z.number().gt(0).max(1).optional(),
    seed: z.number().int().nonnegative().optional(),
  })
  .strict();

export const depositRequestSchema = z
  .object({ text: z.string().min(1).max(LIMITS.depositTextChars) })
  .strict();

export const graftRequestSchema = z
  .object({
    blockId: sha256Schema,
    query: z.string().min(1).max(LIMITS.queryChars),
    maxTokens: z.number().int().min(1).max(LIMITS.maxTokens).default(64),
    sampling: samplingSchema.optional(),
    /** Load a block made under a different engine configuration, then check its probe hash. */
    acceptEngineMismatch: z.literal(true).optional(),
    stream: z.boolean().default(false),
  })
  .strict();
export type GraftRequest = z.input<typeof graftRequestSchema>;

export const generateRequestSchema = z
  .object({
    prompt: z.string().min(1).max(LIMITS.queryChars),
    maxTokens: z.number().int().min(1).max(LIMITS.maxTokens).default(64),
    sampling: samplingSchema.optional(),
    stream: z.boolean().default(false),
  })
  .strict();
export type GenerateRequest = z.input<typeof generateRequestSchema>;

export const timingsSchema = z.object({
  restoreMs: z.number(),
  queryMs: z.number(),
  decodeMs: z.number(),
  totalMs: z.number(),
});

/** What a graft or a plain generation returns; every output is hashed. */
export const generationResultSchema = z.object({
  text: z.string(),
  tokens: z.array(z.number().int()),
  outputSha256: sha256Schema,
  blockSha256: sha256Schema.nullable(),
  tier: tierSchema.nullable(),
  tokensIn: z.number().int(),
  tokensOut: z.number().int(),
  timings: timingsSchema,
  finishReason: z.enum(["maxTokens", "eog", "aborted"]),
});
export type GenerationResult = z.infer<typeof generationResultSchema>;

/** `cold`: only onto the node's disk (from the bucket when it is not there): the pool's placement hint. */
export const prefetchRequestSchema = z
  .object({ tier: z.enum(["hot", "warm", "cold"]).default("hot") })
  .strict();

export const verifyBlockResultSchema = z.object({
  blockSha256: sha256Schema,
  ok: z.boolean(),
  expectedProbeSha256: sha256Schema,
  probeSha256: sha256Schema,
  tier: tierSchema,
  restoreMs: z.number(),
});

export const importStartSchema = z
  .object({
    manifest: blockManifestSchema,
    sizeBytes: z.number().int().positive(),
    chunkBytes: z.number().int().positive(),
  })
  .strict();

/** Which bucket upload to import: the upload id (the upload grant's id) and the block it must be. */
export const bucketImportSchema = z
  .object({
    uploadId: z.string().regex(/^[a-f0-9]{16,64}$/),
    sha256: sha256Schema,
    sizeBytes: z.number().int().positive(),
  })
  .strict();

/** Numbers one sandbox run request carries at most. */
export const MAX_SANDBOX_PARAMS = 64;

export const sandboxRunRequestSchema = z
  .object({
    program: z.string().min(1).max(LIMITS.programChars),
    params: z.array(programParamSchema).max(MAX_SANDBOX_PARAMS).default([]),
    expect: z.string().max(1000).optional(),
  })
  .strict();
/** A sandbox run as callers send it (`params` may be a read-only list). */
export type SandboxRunRequest = Omit<z.input<typeof sandboxRunRequestSchema>, "params"> & {
  params?: readonly ProgramParam[];
};

/**
 * Bytes of block state in each tier: hot, the state of every slot holding a block (a block in two
 * slots counts twice); warm, the RAM copies; cold, every block on the node's disk (hot and warm
 * blocks are on disk too). Sizes are the manifests' `sizeBytes`.
 */
export const tierBytesSchema = z.object({
  hot: z.number().int().nonnegative(),
  warm: z.number().int().nonnegative(),
  cold: z.number().int().nonnegative(),
});
export type TierBytes = z.infer<typeof tierBytesSchema>;

/**
 * The node's storage (gpu-node/server/storage-state.ts). `nonceLog`: `ok`, every accepted nonce
 * is on disk; `memory`, some only in memory, a restart refuses signatures up to the newest of them;
 * `refusing`, none can be recorded, and signed requests answer 507 `nonce_log_full`.
 */
export const storageHealthSchema = z.object({
  status: z.enum(["ok", "failing"]),
  /** Bytes free for the node on its data directory's file system; null when unknown. */
  freeBytes: z.number().int().nonnegative().nullable(),
  nonceLog: z.enum(["ok", "memory", "refusing"]),
  /** The last write refused for storage in the last minute (`disk_full`, `storage_write_failed`). */
  lastFailure: z.object({ code: z.string(), agoS: z.number() }).nullable(),
});
export type StorageHealth = z.infer<typeof storageHealthSchema>;

export const healthSchema = z.object({
  /**
   * `degraded`: a slot could not be wiped after a failed load and is out of service, or the
   * storage is failing (`storage`).
   */
  status: z.enum(["ok", "degraded", "draining"]),
  model: modelFingerprintSchema,
  engine: engineFingerprintSchema,
  /**
   * `sizedBy`: `config`, a configured count; `vram` / `ram`, as many as fit in that memory beside
   * the model (`--slots vram`). Absent from nodes older than this field.
   */
  slots: z.object({
    total: z.number().int(),
    busy: z.number().int(),
    retired: z.number().int().optional(),
    sizedBy: z.enum(["config", "vram", "ram"]).optional(),
  }),
  tiers: z.object({
    hot: z.array(sha256Schema),
    warm: z.array(sha256Schema),
    coldCount: z.number().int(),
    /** Absent from nodes older than this field (the edge shows "n/a"). */
    bytes: tierBytesSchema.optional(),
  }),
  queue: z.object({ depth: z.number().int(), capacity: z.number().int() }),
  /** `isolation` "none", with the reason, when the node runs no programs (no bubblewrap or python3, or disabled). */
  sandbox: z.object({ isolation: z.string(), reason: z.string().optional() }).optional(),
  /** Filling the warm tier from disk after the start: blocks and bytes warmed, left cold, quarantined. */
  warmStart: z
    .object({
      state: z.enum(["off", "pending", "running", "done"]),
      stored: z.number().int(),
      blocks: z.number().int(),
      bytes: z.number().int(),
      skipped: z.number().int(),
      corrupt: z.array(sha256Schema),
      ms: z.number().nullable(),
    })
    .optional(),
  /** The warm tier's RAM in use and its budget, in bytes. */
  warmBytes: z.object({ used: z.number().int(), budget: z.number().int() }).optional(),
  uptimeS: z.number(),
  /** Absent from nodes older than this field. */
  storage: storageHealthSchema.optional(),
});
export type Health = z.infer<typeof healthSchema>;

/** The error body every service returns. */
export const errorBodySchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
  requestId: z.string().optional(),
});

/** Header carrying a request's time budget in milliseconds (model work only). */
export const DEADLINE_HEADER = "x-kvgraft-deadline-ms";
/** Header carrying the SHA-256 of one uploaded import chunk. */
export const CHUNK_SHA256_HEADER = "x-kvgraft-chunk-sha256";

/** Header of `GET /v1/blocks/:id/file` carrying the block's manifest (base64url of its JSON). */
export const BLOCK_MANIFEST_HEADER = "x-kvgraft-manifest";
/** Path of a block's raw state file (signed GET, streamed). */
export const blockFilePath = (id: string) => `/v1/blocks/${id}/file`;

/** Encodes a manifest for BLOCK_MANIFEST_HEADER. */
export function encodeManifestHeader(manifest: BlockManifest): string {
  let bin = "";
  for (const b of new TextEncoder().encode(JSON.stringify(manifest))) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Decodes and validates BLOCK_MANIFEST_HEADER. */
export function decodeManifestHeader(value: string): BlockManifest {
  const bin = atob(value.replace(/-/g, "+").replace(/_/g, "/"));
  const text = new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  return blockManifestSchema.parse(JSON.parse(text));
}

export const blockListSchema = z.object({ blocks: z.array(blockManifestSchema) });

export const prefetchResultSchema = z.object({ blockSha256: sha256Schema, tier: tierSchema });

export const importStartResultSchema = z.object({
  importId: z.string().regex(/^[0-9a-f]{32}$/),
  chunkBytes: z.number().int().positive(),
  chunkCount: z.number().int().positive(),
  /** The session is dropped (and its upload removed) after this long without a chunk. */
  idleTimeoutS: z.number().int().positive(),
});

export const importChunkResultSchema = z.object({
  index: z.number().int().nonnegative(),
  received: z.number().int().nonnegative(),
  chunkCount: z.number().int().positive(),
});

export const sandboxRunResultSchema = z.object({
  verdict: z.enum(["ok", "wrong_answer", "timeout", "memory", "output_limit", "error"]),
  stdout: z.string(),
  stderr: z.string(),
  exitCode: z.number().int().nullable(),
  cpuMs: z.number(),
  wallMs: z.number(),
  isolation: z.string(),
  answer: z.string().nullable(),
});
export type SandboxRunResult = z.infer<typeof sandboxRunResultSchema>;

/** Python's ways of saying an allocation failed (under RLIMIT_AS, or at the WebAssembly heap cap). */
const OUT_OF_MEMORY = /\bMemoryError\b|Cannot allocate memory|std::bad_alloc/;

/** The verdict of a program that exited non-zero within its limits: `memory` when its stderr says an allocation failed. */
export function failedExitVerdict(stderr: string): "memory" | "error" {
  return OUT_OF_MEMORY.test(stderr) ? "memory" : "error";
}

/**
 * Server-sent events of a streamed graft or generation (`token`s, then one `summary` or `error`)
 * or of a streamed solve (`token`s of every sample in turn, then one `solved` or `error`).
 */
export const streamTokenEventSchema = z.object({ token: z.number().int(), text: z.string() });
/** An error after the stream began: the usual error body plus the HTTP status it would have had. */
export const streamErrorEventSchema = errorBodySchema.extend({ status: z.number().int() });
export type StreamEvent =
  | { event: "token"; data: z.infer<typeof streamTokenEventSchema> }
  | { event: "summary"; data: GenerationResult }
  | { event: "solved"; data: SolveResult }
  | { event: "error"; data: z.infer<typeof streamErrorEventSchema> };

export { GPU_ERROR, type GpuErrorCode, gpuErrorCodeSchema } from "./gpu-errors.js";
