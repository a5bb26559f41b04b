/** Block files of random bytes with valid manifests, for the bucket's tests (no model involved). */
import { createHash, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { hashFileWithChunks } from "../../gpu-node/blocks/store/file-hash.js";
import { type BlockOrigin, blockManifest } from "../../shared/block-manifest.js";
import type { BlockManifest } from "../../shared/protocol.js";

const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

/** What a made-up block's manifest says beyond its bytes (for `manifestFields` or `blockManifest`). */
export function madeUpOrigin(label: string): BlockOrigin {
  return {
    tokenCount: 300,
    tokensSha256: sha(`tokens ${label}`),
    textSha256: sha(`text ${label}`),
    model: { sha256: sha("model"), sizeBytes: 1234, architecture: "llama", name: "tiny" },
    engine: {
      nodeLlamaCpp: "3.21.1",
      llamaCppRelease: "b0000",
      backend: "cpu",
      gpuName: null,
      computeCapability: null,
      context: {
        kvKeyType: "F16",
        kvValueType: "F16",
        flashAttention: true,
        swaFullCache: true,
        batchSize: 512,
        sequences: 2,
      },
      id: sha("engine"),
    },
    probe: { token: 300, sha256: sha(`probe ${label}`) },
  };
}

/** A block state file of `size` random bytes in `dir` and its manifest, with `chunkBytes` chunk hashes. */
export async function randomBlockFile(
  dir: string,
  size: number,
  label: string,
  chunkBytes: number,
): Promise<{ path: string; manifest: BlockManifest }> {
  const path = join(dir, "state");
  writeFileSync(path, randomBytes(size));
  const hashed = await hashFileWithChunks(path, chunkBytes);
  const manifest = blockManifest(madeUpOrigin(label), {
    sha256: hashed.sha256,
    sizeBytes: size,
    chunks: { bytes: chunkBytes, sha256: hashed.chunks },
  });
  return { path, manifest };
}
