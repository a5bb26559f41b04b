/**
 * Uploading a block's state object: one streamed PUT up to the multipart threshold, above it an
 * S3 multipart upload (create, parts streamed from the file a few at a time, complete). A
 * multipart upload that fails is aborted, so the store drops its parts and no object appears;
 * an object exists only once Complete succeeds, and the block only once its manifest follows.
 */
import { createReadStream } from "node:fs";
import { Readable } from "node:stream";

/** S3's smallest part (every part but the last). */
export const MIN_PART_BYTES = 5 * 2 ** 20;
/** Part size when the configuration names none. */
export const DEFAULT_PART_BYTES = 64 * 2 ** 20;
/**
 * Largest state sent as one PUT when the configuration names no threshold: under R2's and S3's
 * single-upload limit of about 5 GiB.
 */
export const DEFAULT_MULTIPART_THRESHOLD_BYTES = 4 * 2 ** 30;
/** Parts in flight at once. */
const PARTS_IN_FLIGHT = 4;

/** A signed request to the bucket (query string in `key`); throws 503 when unreachable. */
export type BucketRequest = (method: string, key: string, init?: RequestInit) => Promise<Response>;

/** How uploads are split. */
export interface UploadLimits {
  multipartThresholdBytes: number;
  partBytes: number;
}

/** A body streamed from `[start, start + length)` of the file. */
function fileRange(path: string, start: number, length: number): RequestInit {
  const stream = createReadStream(path, { start, end: start + length - 1, highWaterMark: 1 << 20 });
  return {
    body: Readable.toWeb(stream) as ReadableStream<Uint8Array>,
    headers: {
      "content-length": String(length),
      "content-type": "application/octet-stream",
      "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
    },
    duplex: "half",
  } as RequestInit;
}

/**
 * Uploads `sizeBytes` bytes of the file at `path` as object `key`. Throws `fail(what, status)`'s
 * error when the store refuses a step (after aborting a multipart upload).
 */
export async function uploadObject(
  request: BucketRequest,
  key: string,
  path: string,
  sizeBytes: number,
  limits: UploadLimits,
  fail: (what: string, cause: unknown) => Error,
): Promise<void> {
  if (sizeBytes <= limits.multipartThresholdBytes) {
    const res = await request("PUT", key, fileRange(path, 0, sizeBytes));
    await res.body?.cancel();
    if (!res.ok) throw fail("PUT state", `status ${res.status}`);
    return;
  }
  const created = await request("POST", `${key}?uploads`);
  const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(await created.text())?.[1];
  if (!created.ok || !uploadId) throw fail("create multipart upload", `status ${created.status}`);
  const upload = `${key}?uploadId=${encodeURIComponent(uploadId)}`;
  try {
    const etags = await uploadParts(request, key, uploadId, path, sizeBytes, limits.partBytes, fail);
    const parts = etags
      .map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${etag}</ETag></Part>`)
      .join("");
    const done = await request("POST", upload, {
      body: `<CompleteMultipartUpload>${parts}</CompleteMultipartUpload>`,
      headers: { "content-type": "application/xml" },
    });
    // S3 can answer 200 with an error in the body once the completion has started.
    const answer = await done.text();
    if (!done.ok || answer.includes("<Error>"))
      throw fail("complete multipart upload", `status ${done.status}`);
  } catch (err) {
    // Best effort: a store that cannot abort now keeps invisible parts until its lifecycle rule.
    await request("DELETE", upload)
      .then((res) => res.body?.cancel())
      .catch(() => undefined);
    throw err;
  }
}

/** Uploads the parts, a few at a time; resolves to their ETags in part order. */
async function uploadParts(
  request: BucketRequest,
  key: string,
  uploadId: string,
  path: string,
  sizeBytes: number,
  partBytes: number,
  fail: (what: string, cause: unknown) => Error,
): Promise<string[]> {
  const count = Math.ceil(sizeBytes / partBytes);
  const etags: string[] = new Array(count);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < count) {
      const index = next++;
      const start = index * partBytes;
      const length = Math.min(partBytes, sizeBytes - start);
      try {
        const res = await request(
          "PUT",
          `${key}?partNumber=${index + 1}&uploadId=${encodeURIComponent(uploadId)}`,
          fileRange(path, start, length),
        );
        await res.body?.cancel();
        const etag = res.headers.get("etag");
        if (!res.ok || !etag) throw fail(`PUT part ${index + 1}`, `status ${res.status}`);
        etags[index] = etag;
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  // Every part settles before the caller may abort: a part landing after an abort could stay.
  const settled = await Promise.allSettled(Array.from({ length: Math.min(PARTS_IN_FLIGHT, count) }, worker));
  const failure = settled.find((r) => r.status === "rejected");
  if (failure) throw failure.reason;
  return etags;
}
