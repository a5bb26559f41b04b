/**
 * Block files between nodes, through the GPU client: chunked uploads of a file in hand or of a
 * byte stream of known size (another node's file, never held whole in memory), and the signed,
 * streamed download of a block's state file with its manifest.
 */

import {
  type CallOptions,
  errorFrom,
  GpuError,
  type GpuTransport,
  type ImportSource,
} from "./gpu-transport.js";
import { sha256Hex } from "./hash.js";
import {
  BLOCK_MANIFEST_HEADER,
  type BlockManifest,
  blockFilePath,
  blockManifestSchema,
  CHUNK_SHA256_HEADER,
  decodeManifestHeader,
  gpuPaths,
  importChunkResultSchema,
  importStartResultSchema,
  LIMITS,
} from "./protocol.js";

async function readSlice(source: ImportSource, offset: number, length: number): Promise<Uint8Array> {
  if (source instanceof Uint8Array) return source.subarray(offset, offset + length);
  if (source instanceof Blob)
    return new Uint8Array(await source.slice(offset, offset + length).arrayBuffer());
  return source.read(offset, length);
}

/** The block-file calls of a client over `transport`. */
export function blockFileCalls({ send, call }: GpuTransport) {
  return {
    /**
     * Uploads a block file in chunks (each with its SHA-256), then commits it; the node checks
     * the whole file against the manifest, its fingerprints and its probe. On any failure the
     * import is aborted so the node keeps nothing.
     */
    importBlock: async (
      manifest: BlockManifest,
      source: ImportSource,
      opts: CallOptions & { chunkBytes?: number } = {},
    ): Promise<BlockManifest> => {
      const sizeBytes = source instanceof Uint8Array ? source.length : source.size;
      const chunkBytes = opts.chunkBytes ?? LIMITS.importChunkBytes;
      const started = await call("POST", gpuPaths.imports, importStartResultSchema, {
        manifest,
        sizeBytes,
        chunkBytes,
      });
      try {
        for (let i = 0; i < started.chunkCount; i++) {
          const bytes = await readSlice(
            source,
            i * chunkBytes,
            Math.min(chunkBytes, sizeBytes - i * chunkBytes),
          );
          const res = await send("PUT", gpuPaths.importChunk(started.importId, i), bytes, {
            headers: { [CHUNK_SHA256_HEADER]: await sha256Hex(bytes) },
            ...(opts.signal ? { signal: opts.signal } : {}),
          });
          if (!res.ok) throw await errorFrom(res);
          importChunkResultSchema.parse(await res.json());
        }
        return await call("POST", gpuPaths.importCommit(started.importId), blockManifestSchema, {}, opts);
      } catch (err) {
        // A commit that ran removed the session itself; this covers failures before it.
        await send("DELETE", gpuPaths.importSession(started.importId)).catch(() => undefined);
        throw err;
      }
    },

    /**
     * Opens a block's state file for reading (signed GET, streamed): its manifest (from the
     * header, checked to be the block asked for) and the body. The caller must consume or cancel
     * `body`.
     */
    openBlockFile: async (
      id: string,
      opts: { signal?: AbortSignal } = {},
    ): Promise<{ manifest: BlockManifest; body: ReadableStream<Uint8Array> }> => {
      const res = await send("GET", blockFilePath(id), undefined, opts.signal ? { signal: opts.signal } : {});
      if (!res.ok) throw await errorFrom(res);
      const header = res.headers.get(BLOCK_MANIFEST_HEADER);
      if (!header || !res.body) {
        await res.body?.cancel();
        throw new GpuError(502, "gpu_bad_response", "block file without a manifest header or body");
      }
      const manifest = decodeManifestHeader(header);
      if (manifest.sha256 !== id) {
        await res.body.cancel();
        throw new GpuError(502, "gpu_bad_response", "the node sent the file of another block");
      }
      return { manifest, body: res.body };
    },

    /**
     * Imports a block from a byte stream of known size (another node's file, say), chunk by
     * chunk as the bytes arrive, so the whole file is never held in memory. The node checks each
     * chunk's SHA-256, then the file's SHA-256, fingerprints and probe at the commit.
     */
    importBlockStream: async (
      manifest: BlockManifest,
      body: ReadableStream<Uint8Array>,
      opts: CallOptions & { chunkBytes?: number } = {},
    ): Promise<BlockManifest> => {
      const sizeBytes = manifest.sizeBytes;
      const chunkBytes = opts.chunkBytes ?? LIMITS.importChunkBytes;
      const reader = body.getReader();
      let importId: string | undefined;
      try {
        const started = await call("POST", gpuPaths.imports, importStartResultSchema, {
          manifest,
          sizeBytes,
          chunkBytes,
        });
        importId = started.importId;
        const buffer = new Uint8Array(chunkBytes);
        let filled = 0;
        let index = 0;
        let total = 0;
        const flush = async () => {
          const bytes = buffer.slice(0, filled);
          const res = await send("PUT", gpuPaths.importChunk(started.importId, index), bytes, {
            headers: { [CHUNK_SHA256_HEADER]: await sha256Hex(bytes) },
            ...(opts.signal ? { signal: opts.signal } : {}),
          });
          if (!res.ok) throw await errorFrom(res);
          importChunkResultSchema.parse(await res.json());
          index++;
          filled = 0;
        };
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          let offset = 0;
          total += value.length;
          if (total > sizeBytes) throw new GpuError(502, "gpu_bad_response", "the block file is too long");
          while (offset < value.length) {
            const n = Math.min(chunkBytes - filled, value.length - offset);
            buffer.set(value.subarray(offset, offset + n), filled);
            filled += n;
            offset += n;
            if (filled === chunkBytes) await flush();
          }
        }
        if (filled > 0) await flush();
        if (total !== sizeBytes)
          throw new GpuError(
            502,
            "gpu_bad_response",
            `the block file ended at ${total} of ${sizeBytes} bytes`,
          );
        const committed = await call(
          "POST",
          gpuPaths.importCommit(started.importId),
          blockManifestSchema,
          {},
          opts,
        );
        importId = undefined;
        return committed;
      } catch (err) {
        await reader.cancel().catch(() => undefined);
        if (importId) await send("DELETE", gpuPaths.importSession(importId)).catch(() => undefined);
        throw err;
      }
    },
  };
}
