/**
 * The durable tier: an S3-compatible bucket (Cloudflare R2 in production), content-addressed
 * like the local store: `blocks/<sha256>.state` and `blocks/<sha256>.json`. The manifest is
 * written after the state, so a block exists in the bucket only when its manifest does; an
 * upload cut short leaves at most an orphan state object that no reader ever sees.
 * Requests are signed with aws4fetch (SigV4 over fetch), which runs on Node and in Workers.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { AwsClient } from "aws4fetch";
import { conflict, unavailable } from "../../shared/errors.js";
import { type BlockManifest, blockManifestSchema } from "../../shared/protocol.js";

/** Bytes gathered from the network before one write to the temp file. */
const WRITE_BATCH_BYTES = 8 * 2 ** 20;

/** Where the bucket is and how to sign for it. */
export interface BucketConfig {
  /** Path-style bucket URL: the S3 endpoint followed by the bucket name. */
  url: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** SigV4 region; R2 takes `auto`. */
  region: string;
}

/** Object keys of a block. */
export function blockKeys(sha: string): { state: string; manifest: string } {
  return { state: `blocks/${sha}.state`, manifest: `blocks/${sha}.json` };
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
    const { size } = await stat(statePath);
    const body = Readable.toWeb(createReadStream(statePath, { highWaterMark: 1 << 20 }));
    const state = await this.request("PUT", keys.state, {
      body: body as ReadableStream<Uint8Array>,
      headers: {
        "content-length": String(size),
        "content-type": "application/octet-stream",
        "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
      },
      duplex: "half",
    } as RequestInit);
    await state.body?.cancel();
    if (!state.ok) throw bucketDown("PUT state", `status ${state.status}`);
    const put = await this.request("PUT", keys.manifest, {
      body: `${JSON.stringify(manifest, null, 2)}\n`,
      headers: { "content-type": "application/json" },
    });
    await put.body?.cancel();
    if (!put.ok) throw bucketDown("PUT manifest", `status ${put.status}`);
  }

  /** The block's manifest from the bucket; null when the bucket has no such block. */
  async manifest(sha: string): Promise<BlockManifest | null> {
    const res = await this.request("GET", blockKeys(sha).manifest);
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
   * Streams the block's state into `destPath`, checking each chunk's SHA-256 (and the whole
   * file's) as the bytes arrive; stops at the first chunk that differs. Throws 409
   * `bucket_block_corrupt` for altered or truncated bytes; the caller deletes `destPath`.
   */
  async download(manifest: BlockManifest, destPath: string): Promise<void> {
    const sha = manifest.sha256;
    const res = await this.request("GET", blockKeys(sha).state);
    if (res.status === 404) {
      await res.body?.cancel();
      throw conflict("bucket_block_corrupt", `block ${sha} has a manifest but no state in the bucket`);
    }
    if (!res.ok || !res.body) throw bucketDown("GET state", `status ${res.status}`);
    const chunkBytes = manifest.chunks?.bytes ?? Number.POSITIVE_INFINITY;
    const expected = manifest.chunks?.sha256 ?? [];
    const corrupt = (why: string) =>
      conflict("bucket_block_corrupt", `block ${sha} in the bucket is damaged: ${why}`, { sha256: sha });
    const whole = createHash("sha256");
    let chunk = createHash("sha256");
    let inChunk = 0;
    let chunkIndex = 0;
    let size = 0;
    const endChunk = () => {
      if (manifest.chunks && chunk.digest("hex") !== expected[chunkIndex])
        throw corrupt(`chunk ${chunkIndex} differs`);
      chunkIndex++;
      chunk = createHash("sha256");
      inChunk = 0;
    };
    const file = await open(destPath, "w", 0o644);
    const reader = res.body.getReader();
    // Network reads are small (64 KiB); writing them in batches keeps the disk off the critical path.
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    const flush = async () => {
      if (pendingBytes === 0) return;
      const batch = pending;
      pending = [];
      pendingBytes = 0;
      await file.writev(batch);
    };
    try {
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (err) {
          throw bucketDown("GET state body", err);
        }
        if (next.done) break;
        const buf = next.value;
        size += buf.length;
        if (size > manifest.sizeBytes) throw corrupt("longer than its manifest says");
        whole.update(buf);
        for (let offset = 0; offset < buf.length; ) {
          const take = Math.min(chunkBytes - inChunk, buf.length - offset);
          chunk.update(buf.subarray(offset, offset + take));
          inChunk += take;
          offset += take;
          if (inChunk === chunkBytes) endChunk();
        }
        pending.push(buf);
        pendingBytes += buf.length;
        if (pendingBytes >= WRITE_BATCH_BYTES) await flush();
      }
      if (size !== manifest.sizeBytes) throw corrupt(`truncated at ${size} of ${manifest.sizeBytes} bytes`);
      if (inChunk > 0) endChunk();
      if (whole.digest("hex") !== sha) throw corrupt("the file's SHA-256 differs");
      await flush();
      await file.sync();
    } catch (err) {
      await reader.cancel().catch(() => undefined);
      throw err;
    } finally {
      await file.close();
    }
  }
}
