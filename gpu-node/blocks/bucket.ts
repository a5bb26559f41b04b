/**
 * The durable tier: an S3-compatible bucket (Cloudflare R2 in production), content-addressed
 * like the local store: `blocks/<sha256>.state` and `blocks/<sha256>.json`. The manifest is
 * written after the state, so a block exists in the bucket only when its manifest does; an
 * upload cut short leaves at most an orphan state object that no reader ever sees.
 * Requests are signed with aws4fetch (SigV4 over fetch), which runs on Node and in Workers.
 */
import { AwsClient } from "aws4fetch";
import { type BucketAccess, blockKeys } from "../../shared/bucket-keys.js";
import { conflict, unavailable } from "../../shared/errors.js";
import { type BlockManifest, blockManifestSchema } from "../../shared/protocol.js";
import {
  corruptBlock,
  DEFAULT_FETCH_PARALLEL,
  type FetchTimings,
  fetchRanges,
  type OpenDestination,
} from "./bucket-fetch.js";
import {
  DEFAULT_MULTIPART_THRESHOLD_BYTES,
  DEFAULT_PART_BYTES,
  MIN_PART_BYTES,
  type UploadLimits,
  uploadObject,
} from "./bucket-upload.js";
import { keepAliveAgents, streamedGet } from "./http-get.js";

export { blockKeys };

/** Where the bucket is, how to sign for it, and how to move blocks. */
export interface BucketConfig extends BucketAccess {
  /** Ranged GETs in flight when a block is fetched (default 4). */
  fetchParallel?: number | undefined;
  /** States larger than this go up as multipart uploads (default 4 GiB, under R2's ~5 GiB PUT limit). */
  multipartThresholdBytes?: number | undefined;
  /** Part size of multipart uploads (default 64 MiB; S3 requires at least 5 MiB). */
  partBytes?: number | undefined;
}

const bucketDown = (what: string, cause: unknown) =>
  unavailable(
    "bucket_unavailable",
    `the block bucket could not be reached (${what}): ${cause instanceof Error ? cause.message : String(cause)}`,
    5,
  );

/** A client of the block bucket. */
export class BlockBucket {
  private readonly aws: AwsClient;
  private readonly base: string;
  private readonly fetchParallel: number;
  private readonly limits: UploadLimits;
  /** Connections kept open for the ranged GETs of block fetches. */
  private readonly agents = keepAliveAgents();

  constructor(config: BucketConfig) {
    // No retries inside the signer: a streamed body cannot be sent twice, and callers report failures.
    this.aws = new AwsClient({
      accessKeyId: config.accessKeyId,
      secretAccessKey: config.secretAccessKey,
      service: "s3",
      region: config.region,
      retries: 0,
    });
    this.base = config.url.replace(/\/+$/, "");
    this.fetchParallel = config.fetchParallel ?? DEFAULT_FETCH_PARALLEL;
    this.limits = {
      multipartThresholdBytes: config.multipartThresholdBytes ?? DEFAULT_MULTIPART_THRESHOLD_BYTES,
      partBytes: config.partBytes ?? DEFAULT_PART_BYTES,
    };
    if (this.limits.partBytes < MIN_PART_BYTES)
      throw new Error(
        `bucket part size ${this.limits.partBytes} is under S3's minimum of ${MIN_PART_BYTES} bytes`,
      );
  }

  private async request(method: string, key: string, init: RequestInit = {}): Promise<Response> {
    try {
      return await this.aws.fetch(`${this.base}/${key}`, { ...init, method });
    } catch (err) {
      throw bucketDown(`${method} ${key}`, err);
    }
  }

  /** Whether the block's manifest (and so the block) is in the bucket. */
  async has(sha: string): Promise<boolean> {
    const res = await this.request("HEAD", blockKeys(sha).manifest);
    if (res.status === 404) return false;
    if (!res.ok) throw bucketDown(`HEAD manifest`, `status ${res.status}`);
    return true;
  }

  /**
   * Uploads a committed block: the state file streamed, then the manifest. Skips the upload when
   * the manifest is already there (content-addressed: same name, same bytes).
   */
  async upload(manifest: BlockManifest, statePath: string): Promise<void> {
    if (await this.has(manifest.sha256)) return;
    const keys = blockKeys(manifest.sha256);
    await uploadObject(
      (method, key, init) => this.request(method, key, init),
      keys.state,
      statePath,
      manifest.sizeBytes,
      this.limits,
      bucketDown,
    );
    const put = await this.request("PUT", keys.manifest, {
      body: `${JSON.stringify(manifest, null, 2)}\n`,
      headers: { "content-type": "application/json" },
    });
    await put.body?.cancel();
    if (!put.ok) throw bucketDown("PUT manifest", `status ${put.status}`);
  }

  /** The block's manifest from the bucket; null when the bucket has no such block. */
  manifest(sha: string): Promise<BlockManifest | null> {
    return this.manifestAt(blockKeys(sha).manifest, sha);
  }

  /** The manifest stored as `key`, which must name block `sha`; null when there is no such object. */
  async manifestAt(key: string, sha: string): Promise<BlockManifest | null> {
    const res = await this.request("GET", key);
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    if (!res.ok) throw bucketDown("GET manifest", `status ${res.status}`);
    const parsed = blockManifestSchema.safeParse(await res.json().catch(() => undefined));
    if (!parsed.success || parsed.data.sha256 !== sha)
      throw conflict("bucket_block_corrupt", `the bucket's manifest of block ${sha} is invalid`);
    return parsed.data;
  }

  /**
   * Fetches the block's state with parallel ranged GETs into a destination (a temp file,
   * `fileDestination`, or the warm arena), every chunk's SHA-256 and the whole file's computed as
   * the bytes arrive. Throws 409 `bucket_block_corrupt` for altered, truncated or extended bytes
   * and 503 `bucket_unavailable` for network or server faults; the caller discards the
   * destination's bytes.
   */
  async download(
    manifest: BlockManifest,
    destination: OpenDestination,
    key = blockKeys(manifest.sha256).state,
  ): Promise<FetchTimings> {
    return fetchRanges(
      async (start, end, signal) =>
        streamedGet(
          await this.aws.sign(`${this.base}/${key}`, {
            method: "GET",
            headers: { range: `bytes=${start}-${end}` },
          }),
          signal,
          this.agents,
        ),
      manifest,
      destination,
      { parallel: this.fetchParallel, faults: { down: bucketDown, corrupt: corruptBlock(manifest.sha256) } },
    );
  }

  /** Deletes objects; one already gone is fine. */
  async delete(keys: string[]): Promise<void> {
    for (const key of keys) {
      const res = await this.request("DELETE", key);
      await res.body?.cancel();
      if (!res.ok && res.status !== 404) throw bucketDown(`DELETE ${key}`, `status ${res.status}`);
    }
  }
}
