/**
 * `bench http`: the same deposit and graft in-process (BlockService) and over loopback HTTP
 * (the signed GPU node), one after the other in one process, to show that the output hashes are
 * equal and what the HTTP layer (signing, JSON, admission) adds to a hot graft's latency.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { Engine, type LlamaBinary } from "../gpu-node/engine/engine.js";
import { startGpuNode } from "../gpu-node/server/node.js";
import { quantile } from "../gpu-node/verify.js";
import { createGpuClient } from "../shared/gpu-client.js";

export interface HttpOverheadResult {
  blockSha256: string;
  inProcess: { outputSha256: string; medianMs: number };
  http: { outputSha256: string; medianMs: number };
  hashesEqual: boolean;
  overheadMs: number;
  runs: number;
}

const TEXT =
  "Problem: a train travels 180 km in 2.5 hours. What is its average speed? Solution: speed is distance over " +
  "time, 180 / 2.5 = 72. Program: print(PARAMS[0] / PARAMS[1]). Answer: 72 km/h. ";

/** Runs both paths with the same model, block text and query; medians of `runs` hot grafts. */
export async function benchHttpOverhead(o: {
  modelPath: string;
  binary: LlamaBinary;
  runs: number;
  contextSize: number;
}): Promise<HttpOverheadResult> {
  const dir = await mkdtemp(join(tmpdir(), "kvgraft-http-bench-"));
  const query = " Question: what is the average speed? Answer:";
  const request = { maxTokens: 16 };
  try {
    const engine = await Engine.open({
      modelPath: o.modelPath,
      binary: o.binary,
      slots: 2,
      contextSize: o.contextSize,
    });
    let local: { sha: string; out: string; times: number[] };
    try {
      const blocks = await BlockService.open({ engine, dataDir: join(dir, "local") });
      const manifest = await blocks.deposit(TEXT.repeat(8));
      const times: number[] = [];
      let out = "";
      for (let i = 0; i <= o.runs; i++) {
        const t = performance.now();
        const r = await blocks.graft(manifest.sha256, query, request);
        if (i > 0) times.push(performance.now() - t);
        out = r.outputSha256;
      }
      await blocks.close();
      local = { sha: manifest.sha256, out, times };
    } finally {
      await engine.dispose();
    }
    const secret = randomBytes(24).toString("hex");
    const node = await startGpuNode({
      env: { MODEL_PATH: o.modelPath, KVGRAFT_GPU_SECRET: secret, KV_LLAMA: o.binary },
      dataDir: join(dir, "http"),
      port: 0,
      contextSize: o.contextSize,
      sandbox: false,
    });
    try {
      const client = createGpuClient({ baseUrl: node.url, secret });
      const manifest = await client.deposit(TEXT.repeat(8));
      const times: number[] = [];
      let out = "";
      for (let i = 0; i <= o.runs; i++) {
        const t = performance.now();
        const r = await client.graft({ blockId: manifest.sha256, query, ...request });
        if (i > 0) times.push(performance.now() - t);
        out = r.outputSha256;
      }
      const inProcessMs = quantile(local.times, 0.5);
      const httpMs = quantile(times, 0.5);
      return {
        blockSha256: manifest.sha256,
        inProcess: { outputSha256: local.out, medianMs: inProcessMs },
        http: { outputSha256: out, medianMs: httpMs },
        hashesEqual: out === local.out && manifest.sha256 === local.sha,
        overheadMs: httpMs - inProcessMs,
        runs: o.runs,
      };
    } finally {
      await node.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
