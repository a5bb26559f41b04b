/**
 * Two `kvgraft serve gpu` processes sharing one bucket (KVGRAFT_BUCKET_* in their environment,
 * s3rver on loopback): a deposit on one answers `durable: true` once uploaded; the other node,
 * which never saw the block, grafts it by fetching it from the bucket and answers byte-exact.
 * A bucket URL without credentials is refused at start (exit 2) naming the variable.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGpuClient, type GpuNodeClient } from "../shared/gpu-client.js";
import { kvgraftSourceArgs, supervise } from "../tools/process/supervise.js";
import { runCli } from "./helpers/cli.js";
import { syntheticModel } from "./helpers/models.js";
import { startS3Server, type TestBucketServer } from "./helpers/s3-server.js";

const root = join(import.meta.dirname, "..");
const SECRET = "bucket-nodes-secret-0123456789";
const model = syntheticModel("tiny-llama");
const dirs: string[] = [];
const children: ChildProcess[] = [];
let s3: TestBucketServer;
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await s3?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function bucketEnv(): Record<string, string> {
  return {
    KVGRAFT_BUCKET_URL: s3.config.url,
    KVGRAFT_BUCKET_ACCESS_KEY_ID: s3.config.accessKeyId,
    KVGRAFT_BUCKET_SECRET_ACCESS_KEY: s3.config.secretAccessKey,
    KVGRAFT_BUCKET_REGION: s3.config.region,
  };
}

/** Starts `serve gpu` on a fresh data dir with the bucket configured. */
async function startNode(): Promise<GpuNodeClient> {
  const dataDir = mkdtempSync(join(tmpdir(), "kvgraft-bucket-node-"));
  dirs.push(dataDir);
  const node = supervise({
    name: "serve gpu",
    args: kvgraftSourceArgs(
      ...["serve", "gpu", "--model", model, "--port", "0", "--data-dir", dataDir, "--context", "1024"],
      ...["--no-sandbox", "--json"],
    ),
    cwd: root,
    env: { ...process.env, KVGRAFT_GPU_SECRET: SECRET, ...bucketEnv() },
    ready: (line) => line as { url: string },
  });
  children.push(node.child);
  const ready = await node.ready;
  return createGpuClient({ baseUrl: ready.url, secret: SECRET });
}

describe("GPU nodes sharing a bucket", () => {
  it("a block deposited on one node is durable and grafts byte-exact on another", async () => {
    const [a, b] = await Promise.all([startNode(), startNode()]);
    const text = Array.from({ length: 14 }, (_, k) => `shared fact${k} alpha beta`).join(" ");
    const deposited = await a.deposit(text);
    expect(deposited.durable).toBe(true);
    const query = { blockId: deposited.sha256, query: " What follows? Answer:", maxTokens: 8 };
    const onA = await a.graft(query);
    expect((await b.listBlocks()).map((m) => m.sha256)).not.toContain(deposited.sha256);
    const onB = await b.graft(query);
    expect(onB.outputSha256).toBe(onA.outputSha256);
    expect((await b.listBlocks()).map((m) => m.sha256)).toContain(deposited.sha256);
    // What the node lists it also reads out, while the fetched file may still be being committed.
    expect((await b.getBlock(deposited.sha256)).sha256).toBe(deposited.sha256);
  });

  it("refuses a bucket URL without credentials at start, naming the variable", async () => {
    const result = runCli(["serve", "gpu", "--model", model, "--port", "0", "--no-sandbox"], {
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_BUCKET_URL: s3.config.url,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("KVGRAFT_BUCKET_ACCESS_KEY_ID");
  });
});
