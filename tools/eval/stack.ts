/**
 * The services an evaluation runs against, in-process on loopback: a real GPU node on the model
 * (llama.cpp on this machine, programs in its sandbox) and, for the flywheel experiment, a real
 * edge on a fresh libSQL file in front of it. Each run gets its own temporary folder.
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readGgufFileInfo } from "node-llama-cpp";
import { type EdgeServer, startEdgeServer } from "../../edge/runtime/node.js";
import { type RunningGpuNode, startGpuNode } from "../../gpu-node/server/node.js";
import { createGpuClient, type GpuNodeClient } from "../../shared/gpu-client.js";
import { silentLogger } from "../../shared/http/logger.js";
import { EMBEDDED_MODEL } from "../model/spec.js";

/** The embedded model's path in this checkout. */
export const EMBEDDED_MODEL_PATH = fileURLToPath(new URL(`../../${EMBEDDED_MODEL}`, import.meta.url));

/** The model an evaluation ran: the file's SHA-256 and its parameter count (sum of tensor sizes). */
export interface ModelInfo {
  path: string;
  sha256: string;
  params: number;
}

/** Hashes and measures a GGUF model file. */
export async function modelInfo(path: string): Promise<ModelInfo> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  const info = await readGgufFileInfo(path);
  let params = 0;
  for (const t of info.fullTensorInfo ?? [])
    params += t.dimensions.reduce<number>((n, d) => n * Number(d), 1);
  return { path, sha256: hash.digest("hex"), params };
}

export interface EvalGpu {
  node: RunningGpuNode;
  /** A signed client of the node (what the edge uses). */
  gpu: GpuNodeClient;
  secret: string;
  dir: string;
  close(): Promise<void>;
}

/**
 * Starts a GPU node on `modelPath` with its data in a fresh temporary folder. `env` is the node's
 * configuration (gpu-node/config.ts: KV_LLAMA, KV_THREADS, KVGRAFT_SANDBOX, ...; the command's
 * environment), under the model, secret and log level set here.
 */
export async function startEvalGpu(
  modelPath: string,
  env: Readonly<Record<string, string | undefined>> = {},
): Promise<EvalGpu> {
  const dir = await mkdtemp(join(tmpdir(), "kvgraft-eval-"));
  const secret = randomBytes(24).toString("hex");
  try {
    const node = await startGpuNode(
      {
        env: { ...env, MODEL_PATH: modelPath, KVGRAFT_GPU_SECRET: secret, KVGRAFT_LOG_LEVEL: "silent" },
        port: 0,
        dataDir: join(dir, "gpu"),
      },
      silentLogger,
    );
    return {
      node,
      gpu: createGpuClient({ baseUrl: node.url, secret, timeoutMs: 600_000 }),
      secret,
      dir,
      async close() {
        await node.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

export interface EvalStack extends EvalGpu {
  edge: EdgeServer;
  adminKey: string;
  /** POSTs JSON to the edge with the admin key; throws on a non-2xx answer. */
  post(path: string, body: unknown): Promise<unknown>;
}

/**
 * A GPU node plus an edge on a fresh libSQL file (empty library), the flywheel switched on (its
 * worker is run by the caller, as `kvgraft flywheel --once` runs it), solves capped at `solveMaxTokens`.
 */
export async function startEvalStack(
  modelPath: string,
  solveMaxTokens: number,
  env: Readonly<Record<string, string | undefined>> = {},
): Promise<EvalStack> {
  const gpu = await startEvalGpu(modelPath, env);
  try {
    const edge = await startEdgeServer({
      env: {
        LIBSQL_URL: `file:${join(gpu.dir, "edge.db")}`,
        KVGRAFT_GPU_URL: gpu.node.url,
        KVGRAFT_GPU_SECRET: gpu.secret,
        KVGRAFT_GPU_TIMEOUT_MS: "600000",
        KVGRAFT_SOLVE_MAX_TOKENS: String(solveMaxTokens),
        KVGRAFT_FLYWHEEL: "on",
        KVGRAFT_RATE_LIMIT: "1000000",
        KVGRAFT_LOG_LEVEL: "silent",
      },
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger,
    });
    const adminKey = edge.generatedAdminKey ?? "";
    return {
      ...gpu,
      edge,
      adminKey,
      post: adminPost(edge.url, adminKey),
      async close() {
        await edge.close();
        await gpu.close();
      },
    };
  } catch (err) {
    await gpu.close();
    throw err;
  }
}

/** A JSON POST to an edge with a key: the answer's JSON, or an error naming the path and status. */
export function adminPost(edgeUrl: string, key: string): (path: string, body: unknown) => Promise<unknown> {
  const base = edgeUrl.replace(/\/+$/, "");
  return async (path, body) => {
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = (await res.json().catch(() => null)) as unknown;
    if (!res.ok) throw new Error(`POST ${path}: HTTP ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
}
