/**
 * A real S3-compatible server for the tests: s3rver on loopback (random port), its objects as
 * files in a temp folder, with the one bucket the GPU node uses and s3rver's fixed credentials
 * (it checks SigV4 signatures against them).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import S3rver from "s3rver";
import type { BucketConfig } from "../../gpu-node/blocks/bucket/bucket.js";

export interface TestBucketServer {
  config: BucketConfig;
  /** A signing client for the tests' own tampering with objects. */
  raw: AwsClient;
  stop(): Promise<void>;
}

/** Starts s3rver with bucket `name` on 127.0.0.1. */
export async function startS3Server(name = "kvgraft-blocks"): Promise<TestBucketServer> {
  const directory = mkdtempSync(join(tmpdir(), "kvgraft-s3-"));
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name }],
  });
  const { port } = await server.run();
  const config: BucketConfig = {
    url: `http://127.0.0.1:${port}/${name}`,
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    region: "us-east-1",
  };
  const raw = new AwsClient({ ...config, service: "s3", retries: 0 });
  return {
    config,
    raw,
    async stop() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
