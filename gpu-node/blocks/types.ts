/** The block service's surface, shared by the HTTP layer, the CLI and the benchmarks. */

import type { BlockManifest, GenerationResult, Tier, TierBytes } from "../../shared/protocol.js";
import type { DecodeCounts } from "../engine/decode-stats.js";
import type { BucketUpload } from "./bucket/bucket-import.js";
import type { WarmStartStatus } from "./restore/warm-start.js";

/** Decoding options; temperature 0 decodes greedily. */
export interface Sampling {
  temperature: number;
  topK?: number;
  topP?: number;
  seed?: number;
}

/** Options of one generation (graft or plain). */
export interface GenerationOptions {
  maxTokens: number;
  sampling?: Sampling;
  /** Aborting stops decoding; the result has finishReason "aborted". */
  signal?: AbortSignal;
  /** Called with each decoded token's text as it is produced (for streaming). */
  onToken?: (token: number, text: string) => void;
}

/** Live counters of the tiers and slots, for health and metrics. */
export interface TierSnapshot {
  hot: string[];
  warm: string[];
  coldCount: number;
  /** Bytes of block state per tier (shared/protocol.ts `tierBytesSchema` says what each counts). */
  bytes: TierBytes;
  /** `sizedBy`: a configured count, or as many as fit in VRAM / RAM beside the model (hot-capacity.ts). */
  slots: { total: number; busy: number; retired: number; sizedBy: "config" | "vram" | "ram" };
  queue: { depth: number; capacity: number };
  hits: Record<Tier, number>;
  misses: number;
  restoreMsSum: Record<Tier, number>;
  bytesLoaded: Record<Tier, number>;
  warmBytes: number;
  warmBudgetBytes: number;
  /** Filling the warm tier from disk after the start (warm-start.ts). */
  warmStart: WarmStartStatus;
  /** The engine's decode calls so far: sequences and tokens each carried, by path (decode-stats.ts). */
  decode: DecodeCounts;
}

/** Result of re-checking a stored block: restore it and compare its probe hash. */
export interface BlockCheck {
  blockSha256: string;
  ok: boolean;
  expectedProbeSha256: string;
  probeSha256: string;
  tier: Tier;
  restoreMs: number;
}

/** What the GPU node does with blocks; implemented by BlockService. */
export interface Blocks {
  /** Whether blocks are kept in a bucket: every deposit answered was uploaded first. */
  readonly durable: boolean;
  deposit(text: string): Promise<BlockManifest>;
  graft(
    blockId: string,
    query: string,
    options: GenerationOptions & {
      acceptEngineMismatch?: true;
      /** Check the block's probe hash after the restore (one extra decode step), as a proof of exactness. */
      verifyProbe?: boolean;
    },
  ): Promise<GenerationResult>;
  generate(prompt: string, options: GenerationOptions): Promise<GenerationResult>;
  /** Moves a block up a tier ahead of a request; "cold" only puts it on disk (from the bucket if need be). */
  prefetch(blockId: string, tier: "hot" | "warm" | "cold"): Promise<Tier>;
  verify(blockId: string): Promise<BlockCheck>;
  list(): BlockManifest[];
  get(blockId: string): BlockManifest;
  delete(blockId: string): Promise<void>;
  /** Adds a block file built elsewhere: hash-checked, fingerprint-checked, probe-verified. */
  importFile(tempPath: string, manifest: BlockManifest): Promise<BlockManifest>;
  /** Imports a block uploaded to the bucket (presigned, unverified): verified like importFile, then made durable. */
  importFromBucket(upload: BucketUpload): Promise<BlockManifest>;
  snapshot(): TierSnapshot;
}
