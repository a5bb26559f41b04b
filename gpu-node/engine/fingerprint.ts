/** Model and engine fingerprints: a block only ever loads where both match. */

import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, readFileSync } from "node:fs";
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Llama } from "node-llama-cpp";
import { sha256Hex } from "../../shared/hash.js";
import { nativeStateApi } from "./state-memory.js";

/** The numeric configuration of a context; any difference can change the bits of a state. */
export interface ContextConfig {
  kvKeyType: string;
  kvValueType: string;
  flashAttention: boolean;
  swaFullCache: boolean;
  batchSize: number;
  /** Sequence slots: llama.cpp saves one KV stream per slot, and a load needs the same count. */
  sequences: number;
}

/** What produced a state: library versions, backend, GPU and context configuration. */
export interface EngineFingerprint {
  nodeLlamaCpp: string;
  llamaCppRelease: string;
  /** kvgraft's engine build (in-memory state path, exact sliding-window restores) or the npm binaries. */
  build?: "kvgraft" | "npm";
  backend: string;
  gpuName: string | null;
  computeCapability: string | null;
  context: ContextConfig;
  /** SHA-256 of the canonical JSON of the fields above. */
  id: string;
}

/** The model file's identity. */
export interface ModelFingerprint {
  sha256: string;
  sizeBytes: number;
  architecture: string;
  name: string;
}

// The package's exports hide package.json, so read it beside the resolved entry (dist/index.js).
const nodeLlamaCppVersion: string = (
  JSON.parse(
    readFileSync(
      join(dirname(fileURLToPath(import.meta.resolve("node-llama-cpp"))), "..", "package.json"),
      "utf8",
    ),
  ) as { version: string }
).version;

/** Canonical JSON: object keys sorted, so equal values hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

async function nvidiaComputeCapability(): Promise<string | null> {
  try {
    const { stdout } = await promisify(execFile)(
      "nvidia-smi",
      ["--query-gpu=compute_cap", "--format=csv,noheader"],
      {
        timeout: 5000,
      },
    );
    return stdout.trim().split("\n")[0]?.trim() || null;
  } catch {
    return null;
  }
}

/** Computes the engine fingerprint of a loaded Llama with the given context configuration. */
export async function engineFingerprint(llama: Llama, context: ContextConfig): Promise<EngineFingerprint> {
  const backend = llama.gpu === false ? "cpu" : llama.gpu;
  const gpuName = backend === "cpu" ? null : ((await llama.getGpuDeviceNames())[0] ?? null);
  const fields = {
    nodeLlamaCpp: nodeLlamaCppVersion,
    llamaCppRelease: llama.llamaCppRelease.release,
    // Our engine build (gpu-node/engine/native/) writes sliding-window states with their cell
    // geometry, which the npm prebuilt binaries cannot read: blocks of one never load in the other.
    build: (nativeStateApi(llama) ? "kvgraft" : "npm") as "kvgraft" | "npm",
    backend,
    gpuName,
    computeCapability: backend === "cuda" ? await nvidiaComputeCapability() : null,
    context,
  };
  return { ...fields, id: await sha256Hex(canonicalJson(fields)) };
}

interface HashCacheEntry {
  size: number;
  mtimeMs: number;
  sha256: string;
}

/** Default location of the model hash cache. */
export const DEFAULT_HASH_CACHE = join(homedir(), ".cache", "kvgraft", "model-sha256.json");

/**
 * SHA-256 of a model file, cached by absolute path, size and mtime so a 25 GB model is hashed
 * once, not at every start.
 */
export async function modelFileSha256(
  modelPath: string,
  cacheFile = DEFAULT_HASH_CACHE,
): Promise<{ sha256: string; size: number }> {
  const path = resolve(modelPath);
  const info = await stat(path);
  let cache: Record<string, HashCacheEntry> = {};
  try {
    cache = JSON.parse(await readFile(cacheFile, "utf8")) as Record<string, HashCacheEntry>;
  } catch {
    // no cache yet, or unreadable: start a new one
  }
  const hit = cache[path];
  if (hit && hit.size === info.size && hit.mtimeMs === info.mtimeMs)
    return { sha256: hit.sha256, size: info.size };
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 24 })) hash.update(chunk as Buffer);
  const sha256 = hash.digest("hex");
  cache[path] = { size: info.size, mtimeMs: info.mtimeMs, sha256 };
  try {
    await mkdir(dirname(cacheFile), { recursive: true });
    const temp = `${cacheFile}.${process.pid}.tmp`;
    await writeFile(temp, JSON.stringify(cache));
    await rename(temp, cacheFile);
  } catch {
    // the cache is an optimisation; a read-only home only costs a re-hash next time
  }
  return { sha256, size: info.size };
}
