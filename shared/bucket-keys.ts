/**
 * Object names in the block bucket, and presigned uploads into it. Runtime-neutral (aws4fetch:
 * fetch and Web Crypto), so the edge (a Worker) presigns and the GPU node reads the same names.
 *
 * - `blocks/<sha256>.state` and `blocks/<sha256>.json`: verified blocks (the manifest last).
 * - `uploads/<uploadId>/<sha256>.state|.json`: an admin's upload through presigned URLs, not yet
 *   verified; a GPU node verifies it, stores it under `blocks/`, and deletes these objects
 *   (refused ones too).
 */
import { AwsClient } from "aws4fetch";

/** Where a bucket is and how to sign for it. */
export interface BucketAccess {
  /** Path-style bucket URL: the S3 endpoint followed by the bucket name. */
  url: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** SigV4 region; R2 takes `auto`. */
  region: string;
}

/** Object keys of a verified block. */
export function blockKeys(sha: string): { state: string; manifest: string } {
  return { state: `blocks/${sha}.state`, manifest: `blocks/${sha}.json` };
}

/** Object keys of an admin's upload of block `sha` (unverified until a GPU node imports it). */
export function uploadKeys(uploadId: string, sha: string): { state: string; manifest: string } {
  return { state: `uploads/${uploadId}/${sha}.state`, manifest: `uploads/${uploadId}/${sha}.json` };
}

/** A URL that lets its holder PUT one object, until `expiresInS` seconds from now. */
export async function presignPut(access: BucketAccess, key: string, expiresInS: number): Promise<string> {
  const aws = new AwsClient({ ...access, service: "s3", retries: 0 });
  const url = new URL(`${access.url.replace(/\/+$/, "")}/${key}`);
  url.searchParams.set("X-Amz-Expires", String(expiresInS));
  const signed = await aws.sign(url.toString(), { method: "PUT", aws: { signQuery: true } });
  return signed.url;
}
