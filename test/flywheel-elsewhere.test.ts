/**
 * The flywheel's agreement must hold away from the problem's own numbers
 * (edge/services/flywheel-elsewhere.ts): programs of different source are run on nearby numbers
 * in the real sandbox of a real GPU node. Then the case that made the check: the embedded model,
 * asked for the least common multiple of 12 and 34, writes `n // k` and `gcd(a, b)`, both print 2,
 * and the flywheel deposited 2 as verified; now it rejects it and deposits nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../edge/http.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { runFlywheelOnce } from "../edge/services/flywheel.service.js";
import { agreementElsewhere, nearbySets } from "../edge/services/flywheel-elsewhere.js";
import { type RunningGpuNode, startGpuNode } from "../gpu-node/server/node.js";
import { createGpuClient, type GpuNodeClient } from "../shared/gpu-client.js";
import { silentLogger } from "../shared/http/logger.js";

const SECRET = "elsewhere-test-secret-0123456789";
const EMBEDDED = join(import.meta.dirname, "..", "models", "kvgraft-math.gguf");

let dir: string;
let node: RunningGpuNode;
let edge: EdgeServer;
let gpu: GpuNodeClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-elsewhere-"));
  node = await startGpuNode(
    { env: { MODEL_PATH: EMBEDDED, KVGRAFT_GPU_SECRET: SECRET }, port: 0, dataDir: join(dir, "gpu") },
    silentLogger,
  );
  gpu = createGpuClient({ baseUrl: node.url, secret: SECRET });
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: node.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_GPU_TIMEOUT_MS: "60000",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
});

afterAll(async () => {
  await edge?.close();
  await node?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("agreement away from the problem's numbers", () => {
  it("moves each number one and two steps and doubles it, then all together, without repeats", () => {
    expect(nearbySets(["12", "34"])).toEqual([
      ["13", "34"],
      ["14", "34"],
      ["24", "34"],
      ["12", "35"],
      ["12", "36"],
      ["12", "68"],
      ["13", "35"],
      ["24", "68"],
    ]);
    expect(nearbySets(["0"])).toEqual([["1"], ["2"]]);
    expect(nearbySets([])).toEqual([]);
  });

  it("rejects programs that agree only by coincidence, and a constant beside a computation", async () => {
    const count = "k, n = PARAMS\nprint(n // k)";
    const gcd = "a, b = PARAMS\nimport math\nprint(math.gcd(a, b))";
    const lonely = await agreementElsewhere(edge.gpu, [count, gcd], ["12", "34"], "2");
    expect(lonely).toMatchObject({
      agrees: false,
      reason: "programs_disagree_elsewhere",
      params: ["13", "34"],
    });
    expect(lonely).toMatchObject({ printed: ["2", "1"] });
    const constant = await agreementElsewhere(edge.gpu, ["print(2)", count], ["12", "34"], "2");
    expect(constant).toMatchObject({ agrees: false, reason: "programs_disagree_elsewhere" });
  });

  it("accepts two solutions of one problem, and fails closed when no nearby set runs", async () => {
    const lcm = "a, b = PARAMS\nimport math\nprint(math.lcm(a, b))";
    const product = "a, b = PARAMS\nfrom math import gcd\nprint(a * b // gcd(a, b))";
    expect(await agreementElsewhere(edge.gpu, [lcm, product], ["12", "34"], "204")).toEqual({
      agrees: true,
      sets: 8,
    });
    const pinned = (p: string) => `a, b = PARAMS\nassert (a, b) == (12, 34)\n${p}`;
    expect(await agreementElsewhere(edge.gpu, [pinned(lcm), pinned(product)], ["12", "34"], "204")).toEqual({
      agrees: false,
      reason: "agreement_untested",
      sets: 0,
    });
    expect(await agreementElsewhere(edge.gpu, ["print(6 * 7)", "print(42)"], [], "42")).toEqual({
      agrees: true,
      sets: 0,
    });
  });

  it("keeps the embedded model's coincidence out of the library", async () => {
    const deps = { db: edge.db, gpu: edge.gpu, config: edge.config, clock: systemClock };
    const res = await fetch(`${edge.url}/admin/flywheel`, {
      method: "POST",
      headers: { authorization: `Bearer ${edge.generatedAdminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ problem: "What is the least common multiple of 12 and 34?" }),
    });
    expect(res.status).toBe(201);
    const item = await runFlywheelOnce(deps);
    // The heavy solve's majority is 2 and two programs of different source print it.
    expect(item?.result).toMatchObject({ answer: "2", programsAgree: true });
    expect(item?.status).toBe("rejected");
    expect(item?.result).toMatchObject({ reason: "programs_disagree_elsewhere", params: ["13", "34"] });
    expect(await gpu.listBlocks()).toHaveLength(0);
  });
});
