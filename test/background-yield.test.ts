/**
 * Background solves (the flywheel's, `priority: "background"`) yield to other model work on a GPU
 * node (gpu-node/server/foreground.ts): a running one is stopped when a user's solve arrives and
 * run again once it is done, with the same answer as had it run alone; a waiting one starts only
 * after. The real node on loopback, a generated tiny model, the real sandbox, the signed client.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGpuNode, startGpuNode } from "../gpu-node/server/node.js";
import { createGpuClient, type GpuError, type GpuNodeClient } from "../shared/gpu-client.js";
import { silentLogger } from "../shared/http/logger.js";
import type { SolveRequest } from "../shared/solve-protocol.js";
import { metricsUntil, metricValue } from "./helpers/edge-gpu.js";
import { syntheticModel } from "./helpers/models.js";

const SECRET = "background-test-secret-0123456789";
const PROBLEM = "A box holds 17 rows of 23 marbles. How many marbles are in the box?";
const BACKGROUND: SolveRequest = {
  problem: PROBLEM,
  samples: 4,
  maxTokens: 800,
  seed: 7,
  priority: "background",
};
const USER: SolveRequest = { problem: PROBLEM, samples: 1, maxTokens: 60, seed: 3 };

let dataDir: string;
let node: RunningGpuNode;
let client: GpuNodeClient;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "kvgraft-background-"));
  node = await startGpuNode(
    {
      env: { MODEL_PATH: syntheticModel("tiny-llama"), KVGRAFT_GPU_SECRET: SECRET },
      port: 0,
      dataDir,
      contextSize: 1024,
    },
    silentLogger,
  );
  client = createGpuClient({ baseUrl: node.url, secret: SECRET });
});

afterAll(async () => {
  await node?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** A metric's value on the node now. */
const metric = async (name: string, labels: Record<string, string> = {}) =>
  metricValue(await client.metrics(), name, labels);

/** Polls until `name{labels}` reads `value`, for at most 20 s. */
const until = (name: string, labels: Record<string, string>, value: number) =>
  metricsUntil(client, (text) => metricValue(text, name, labels) === value, 20_000);

describe("background solves", () => {
  it("are stopped for a user's solve and run again after it, with the answer they give alone", async () => {
    const alone = await client.solve(BACKGROUND);
    expect(await metric("kvgraft_background_preempted_total")).toBe(0);

    const order: string[] = [];
    const background = client.solve(BACKGROUND).then((r) => {
      order.push("background");
      return r;
    });
    await until("kvgraft_background_jobs", { state: "running" }, 1);
    const user = await client.solve(USER);
    order.push("user");
    const again = await background;

    expect(await metric("kvgraft_background_preempted_total")).toBe(1);
    expect(order).toEqual(["user", "background"]);
    expect(user.samples).toHaveLength(1);
    // The rerun is the whole solve again, alone: the same samples, programs and vote.
    expect(again.outputSha256).toBe(alone.outputSha256);
    const runs = (r: typeof alone) => r.samples.map((s) => s.run && { ...s.run, wallMs: 0 });
    expect(runs(again)).toEqual(runs(alone));
    expect(again.answer).toBe(alone.answer);
    expect(await metric("kvgraft_background_jobs", { state: "running" })).toBe(0);
  });

  it("wait while other model work runs, and never start beside it", async () => {
    const before = await metric("kvgraft_background_preempted_total");
    const order: string[] = [];
    const user = client.solve({ ...USER, samples: 4, maxTokens: 800 }).then(() => order.push("user"));
    await until("kvgraft_queue_depth", {}, 1);
    const background = client.solve(BACKGROUND).then(() => order.push("background"));
    await until("kvgraft_background_jobs", { state: "waiting" }, 1);
    await Promise.all([user, background]);
    expect(order).toEqual(["user", "background"]);
    // It never ran beside the user's solve, so there was nothing to stop.
    expect(await metric("kvgraft_background_preempted_total")).toBe(before);
  });

  it("give up with 429 background_deferred after waiting half their deadline, and never ran", async () => {
    const before = await metric("kvgraft_background_preempted_total");
    const user = client.solve({ ...USER, samples: 4, maxTokens: 800 });
    await until("kvgraft_queue_depth", {}, 1);
    // 600 ms of deadline: it waits 300 ms for a user's solve that takes seconds here.
    const err = (await client.solve(BACKGROUND, { deadlineMs: 600 }).catch((e: unknown) => e)) as GpuError;
    expect(err.status).toBe(429);
    expect(err.code).toBe("background_deferred");
    expect(await metric("kvgraft_background_jobs", { state: "waiting" })).toBe(0);
    await user;
    expect(await metric("kvgraft_background_preempted_total")).toBe(before);
  });

  it("refuses a background solve that asks to stream", async () => {
    const err = (await client.solveStream(BACKGROUND).catch((e: unknown) => e)) as GpuError;
    expect(err.status).toBe(400);
    expect(JSON.stringify(err.details)).toContain("a background solve cannot stream");
  });
});
