/**
 * A real edge on loopback in front of a real GPU node (a generated tiny random-weight model on
 * llama.cpp, the real sandbox), with one library problem deposited through the admin API. Its
 * program prints a constant, so it answers that exact problem only: the same problem is the
 * library fast path (0 GPU tokens), the same words with new numbers a graft of its block
 * (`transferRefused`), and unrelated words the model's sampled solve.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type EdgeServer, startEdgeServer } from "../../edge/runtime/node.js";
import { type RunningGpuNode, startGpuNode } from "../../gpu-node/server/node.js";
import { createGpuClient, type GpuNodeClient } from "../../shared/gpu-client.js";
import { silentLogger } from "../../shared/http/logger.js";
import { syntheticModel } from "./models.js";

const SECRET = "edge-gpu-test-secret-0123456789";

/** The deposited library problem and queries for each path. */
export const LIBRARY_PROBLEM = "A farmer has 12 cows and buys 5 more. How many cows does the farmer have?";
export const GRAFT_PROBLEM = "A farmer has 30 cows and buys 9 more. How many cows does the farmer have?";
export const MODEL_PROBLEM = "Name the smallest prime that divides every even number.";
/** The most tokens a request may ask for (the disconnect tests ask for this many). */
export const MAX_TOKENS = 800;

export interface EdgeWithGpu {
  edge: EdgeServer;
  node: RunningGpuNode;
  /** A signed client of the GPU node itself, for its metrics. */
  gpu: GpuNodeClient;
  adminKey: string;
  close(): Promise<void>;
}

/** Starts both services and deposits the library problem. */
export async function startEdgeWithGpu(): Promise<EdgeWithGpu> {
  const dir = mkdtempSync(join(tmpdir(), "kvgraft-edge-gpu-"));
  const node = await startGpuNode(
    {
      env: { MODEL_PATH: syntheticModel("tiny-llama"), KVGRAFT_GPU_SECRET: SECRET },
      port: 0,
      dataDir: join(dir, "gpu"),
    },
    silentLogger,
  );
  const edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: node.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_SOLVE_MAX_TOKENS: String(MAX_TOKENS),
      KVGRAFT_FLYWHEEL: "off",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  const adminKey = edge.generatedAdminKey ?? "";
  const res = await fetch(`${edge.url}/admin/solutions`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({
      problem: LIBRARY_PROBLEM,
      solution: "12 cows and 5 more make 17 cows.",
      program: "print(17)",
      answer: "17",
    }),
  });
  if (res.status !== 201) throw new Error(`deposit failed: ${res.status} ${await res.text()}`);
  return {
    edge,
    node,
    gpu: createGpuClient({ baseUrl: node.url, secret: SECRET }),
    adminKey,
    async close() {
      await edge.close();
      await node.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The sum of a Prometheus metric's samples that carry `labels`. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

/** Polls the GPU node's metrics until `check` holds; returns them (throws after `timeoutMs`). */
export async function metricsUntil(
  gpu: GpuNodeClient,
  check: (metrics: string) => boolean,
  timeoutMs = 5000,
): Promise<string> {
  const t0 = Date.now();
  for (;;) {
    const text = await gpu.metrics();
    if (check(text)) return text;
    if (Date.now() - t0 > timeoutMs)
      throw new Error(`metrics condition not met within ${timeoutMs} ms:\n${text}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
