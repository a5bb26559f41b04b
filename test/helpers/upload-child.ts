/**
 * A child process for the kill-mid-upload test: uploads one block to the bucket with
 * BlockBucket.upload, printing `uploading` as it starts and `uploaded` when the manifest is in.
 *
 * Usage: node --import tsx test/helpers/upload-child.ts '<json { bucket, manifest, statePath }>'
 * It is a script (it runs on import), so tests spawn it rather than import it.
 */
import { BlockBucket, type BucketConfig } from "../../gpu-node/blocks/bucket/bucket.js";
import type { BlockManifest } from "../../shared/protocol.js";

const { bucket, manifest, statePath } = JSON.parse(process.argv[2] ?? "{}") as {
  bucket: BucketConfig;
  manifest: BlockManifest;
  statePath: string;
};
process.stdout.write("uploading\n");
await new BlockBucket(bucket).upload(manifest, statePath);
process.stdout.write("uploaded\n");
