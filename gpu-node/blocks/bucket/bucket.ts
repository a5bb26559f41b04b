/**
 * The durable tier: an S3-compatible bucket (Cloudflare R2 in production), content-addressed
 * like the local store: `blocks/<sha256>.state` and `blocks/<sha256>.json`. The manifest is
 * written after the state, so a block exists in the bucket only when its manifest does; an
 * upload cut short leaves at most an orphan state object that no reader ever sees.
 * Requests are signed with aws4fetch (SigV4 over fetch), which runs on Node and in Workers.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { AwsClient } from "aws4fetch";
import { type BucketAccess, blockKeys } from "../../../shared/bucket-keys.js";
import { type BlockManifest, blockManifestSchema } from "../../../shared/protocol.js";
import { conflict, unavailable } from "../../errors.js";
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
import { BulkHttpClient } from "./http/http-get.js";

export { blockKeys };

/** Where the bucket is, how to sign for it, and how to move blocks. */
export interface BucketConfig extends BucketAccess {
  /** Ranged GETs in flight when a block is fetched (default 4). */
  fetchParallel?: number | undefined;
  /** States larger than this go up as multipart uploads (default 4 GiB, under R2's ~5 GiB PUT limit). */
  multipartThresholdBytes?: number | undefined;
  /** Part size of multipart uploads (default 64 MiB; S3 requires at least 5 MiB). */
  partBytes?: number | undefined;
  /**
   * The GPU nodes' shared secrets (current first, then one being rotated out): a node tags each
   * manifest it uploads with an HMAC under the first, and a fetch that finds a tag under any of
   * them trusts the manifest's chunk hashes without first hashing the whole state (see
   * `download`). None: no tags, every fetch hashes the whole state before it is served.
   */
  manifestSecrets?: readonly string[] | undefined;
}

/** The S3 user metadata header that carries a manifest's tag. */
const MANIFEST_TAG_HEADER = "x-amz-meta-kvgraft-tag";

/** A block's manifest from the bucket, and whether a node of this cluster wrote it (its tag). */
export interface FetchedManifest {
  manifest: BlockManifest;
  authenticated: boolean;
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
  private readonly bulk = new BulkHttpClient();
  /** Keys of the manifest tags (derived from the node secrets), the tagging one first. */
  private readonly tagKeys: Buffer[];

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
    this.tagKeys = (config.manifestSecrets ?? []).map((secret) =>
      createHmac("sha256", secret).update("kvgraft bucket manifest tag v1").digest(),
    );
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
    const body = `${JSON.stringify(manifest, null, 2)}\n`;
    const [tagKey] = this.tagKeys;
    const put = await this.request("PUT", keys.manifest, {
      body,
      headers: {
        "content-type": "application/json",
        ...(tagKey ? { [MANIFEST_TAG_HEADER]: tagOf(tagKey, body) } : {}),
      },
    });
    await put.body?.cancel();
    if (!put.ok) throw bucketDown("PUT manifest", `status ${put.status}`);
  }

  /** The block's manifest from the bucket; null when the bucket has no such block. */
  async manifest(sha: string): Promise<BlockManifest | null> {
    return (await this.manifestAt(blockKeys(sha).manifest, sha))?.manifest ?? null;
  }

  /**
   * The manifest stored as `key`, which must name block `sha`, and whether it carries a valid tag
   * of this cluster's nodes; null when there is no such object.
   */
  async manifestAt(key: string, sha: string): Promise<FetchedManifest | null> {
    const res = await this.request("GET", key);
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    if (!res.ok) throw bucketDown("GET manifest", `status ${res.status}`);
    const body = await res.text().catch(() => "");
    const parsed = blockManifestSchema.safeParse(parseJson(body));
    if (!parsed.success || parsed.data.sha256 !== sha)
      throw conflict("bucket_block_corrupt", `the bucket's manifest of block ${sha} is invalid`);
    const tag = Buffer.from(res.headers.get(MANIFEST_TAG_HEADER) ?? "", "hex");
    const authenticated =
      tag.length === 32 &&
      this.tagKeys.some((key) => timingSafeEqual(Buffer.from(tagOf(key, body), "hex"), tag));
    return { manifest: parsed.data, authenticated };
  }

  /**
   * Fetches the block's state with parallel ranged GETs into a destination (a temp file,
   * `fileDestination`, or the warm arena), every chunk's SHA-256 computed as the bytes arrive and
   * checked against the manifest. The whole state's SHA-256 (the block's name, which binds the
   * chunk list to it) is checked too, unless `chunksTrusted` (a manifest with this cluster's tag,
   * whose chunk list a node computed from verified bytes) lets the destination leave it to the
   * caller: the result says whether it was checked. Throws 409 `bucket_block_corrupt` for
   * altered, truncated or extended bytes and 503 `bucket_unavailable` for network or server
   * faults; the caller discards the destination's bytes.
   */
  async download(
    manifest: BlockManifest,
    destination: OpenDestination,
    options: { key?: string; chunksTrusted?: boolean } = {},
  ): Promise<FetchTimings & { wholeChecked: boolean }> {
    return fetchRanges(
      async (start, end, signal) => {
        const signed = await this.aws.sign(
          `${this.base}/${options.key ?? blockKeys(manifest.sha256).state}`,
          {
            method: "GET",
            headers: { range: `bytes=${start}-${end}` },
          },
        );
        return this.bulk.get(new URL(signed.url), signed.headers, signal);
      },
      manifest,
      destination,
      {
        parallel: this.fetchParallel,
        chunksTrusted: options.chunksTrusted === true,
        faults: { down: bucketDown, corrupt: corruptBlock(manifest.sha256) },
      },
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

/** The tag of a manifest body: HMAC-SHA256 under a key derived from a node secret, hex. */
function tagOf(key: Buffer, body: string): string {
  return createHmac("sha256", key).update(body).digest("hex");
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
