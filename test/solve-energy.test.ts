/**
 * The GPU node's energy reaches the edge's solve answer. A `kvgraft serve gpu` child process (tiny
 * random-weight model, the real sandbox) runs with a stand-in `nvidia-smi` first on its PATH, so
 * the node's power sampling (gpu-node/telemetry/power.ts) runs on a machine without an NVIDIA GPU.
 * While the stand-in answers as nvidia-smi does (`-L` lists a GPU; the power query prints one
 * reading every `-lms` milliseconds until killed), a model solve's `cost.energy` is a positive
 * figure in the JSON answer, the streamed `result` event, the OpenAI answer's `kvgraft` extension
 * and the playground; while it fails as nvidia-smi does without a driver, energy is null and the
 * playground says "not measured". The edge runs in this process, in front of the child.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { readSse } from "../shared/gpu-client.js";
import { silentLogger } from "../shared/http/logger.js";
import { kvgraftSourceArgs, readyUrl, type Supervised, supervise } from "../tools/process/supervise.js";
import { syntheticModel } from "./helpers/models.js";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

const root = join(import.meta.dirname, "..");
const SECRET = "solve-energy-secret-0123456789abcdef";
const PROBLEM = "Name the smallest prime that divides every even number.";
/** The power the stand-in reports, in watts. */
const WATTS = 150.25;

/**
 * The stand-in: with a `watts` file beside it, nvidia-smi on a machine with one GPU drawing that
 * many watts; without, nvidia-smi without a driver (exit 9, as the real one).
 */
const STAND_IN = `#!/bin/sh
here=$(dirname "$0")
if [ ! -f "$here/watts" ]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
  exit 9
fi
if [ "$1" = "-L" ]; then
  echo "GPU 0: Stand-in GPU (UUID: GPU-00000000-0000-0000-0000-000000000000)"
  exit 0
fi
interval=""
previous=""
for arg in "$@"; do
  if [ "$previous" = "-lms" ]; then interval=$arg; fi
  previous=$arg
done
if [ -z "$interval" ]; then cat "$here/watts"; exit 0; fi
seconds=$(awk "BEGIN { print $interval / 1000 }")
while :; do
  cat "$here/watts"
  sleep "$seconds"
done
`;

let dir: string;
let bin: string;
let node: Supervised<string>;
let edge: EdgeServer;
let adminKey: string;

// Model solves run their programs in the sandbox: without bubblewrap the node cannot solve.

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-solve-energy-"));
  bin = join(dir, "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "nvidia-smi"), STAND_IN);
  chmodSync(join(bin, "nvidia-smi"), 0o755);
  node = supervise({
    name: "serve gpu",
    args: kvgraftSourceArgs(
      ...["serve", "gpu", "--model", syntheticModel("tiny-llama"), "--port", "0"],
      ...["--data-dir", join(dir, "gpu"), "--context", "1024", "--json"],
    ),
    cwd: root,
    env: {
      ...process.env,
      PATH: `${bin}${delimiter}${process.env.PATH ?? ""}`,
      KVGRAFT_GPU_SECRET: SECRET,
      KV_THREADS: "1",
    },
    ready: readyUrl,
  });
  const url = await node.ready;
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_SOLVE_MAX_TOKENS: "256",
      KVGRAFT_FLYWHEEL: "off",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  adminKey = edge.generatedAdminKey ?? "";
}, 180_000);

afterAll(async () => {
  await edge?.close();
  await node?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function post(path: string, body: Json): Promise<Response> {
  return fetch(`${edge.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function solved(): Promise<Json> {
  const res = await post("/v1/solve", { problem: PROBLEM });
  expect(res.status).toBe(200);
  return (await res.json()) as Json;
}

/** The playground's answer panel for the problem (signed in with the admin key, as a browser would be). */
async function playgroundEnergy(): Promise<string> {
  const signin = await fetch(`${edge.url}/console/signin`, {
    method: "POST",
    body: new URLSearchParams({ key: adminKey }),
    headers: { origin: edge.url },
    redirect: "manual",
  });
  const cookie = (signin.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const page = await fetch(`${edge.url}/console/playground`, {
    method: "POST",
    body: new URLSearchParams({ problem: PROBLEM, mode: "auto" }),
    headers: { origin: edge.url, cookie },
  });
  expect(page.status).toBe(200);
  const html = await page.text();
  return /<dd id="energy">([^<]*)<\/dd>/.exec(html)?.[1] ?? `no energy in: ${html.slice(0, 200)}`;
}

function expectMeasured(energy: Json): void {
  expect(energy.joules).toBeGreaterThan(0);
  expect(energy.wh).toBeCloseTo(energy.joules / 3600, 12);
  // Every reading was WATTS, so their mean is too.
  expect(energy.meanWatts).toBeCloseTo(WATTS, 6);
  expect(energy.samples).toBeGreaterThanOrEqual(2);
  expect(energy.intervalMs).toBe(100);
}

describe("a model solve's energy through the edge", () => {
  it("is null, and 'not measured' in the playground, while nvidia-smi does not answer", async () => {
    const answer = await solved();
    expect(answer.source).toBe("model");
    expect(answer.cost.energy).toBeNull();
    expect(await playgroundEnergy()).toBe("not measured");
  });

  it("is the node's power reading over the solve where nvidia-smi answers: JSON, streamed, OpenAI and playground", async () => {
    writeFileSync(join(bin, "watts"), `${WATTS}\n`);
    const answer = await solved();
    expect(answer.source).toBe("model");
    expectMeasured(answer.cost.energy);

    const stream = await post("/v1/solve", { problem: PROBLEM, stream: true });
    const events: { event: string; data: Json }[] = [];
    for await (const e of readSse(stream.body as ReadableStream<Uint8Array>))
      events.push(e as { event: string; data: Json });
    const result = events.at(-1);
    expect(result?.event).toBe("result");
    expectMeasured(result?.data.cost.energy);

    const chat = await post("/v1/chat/completions", {
      model: "kvgraft",
      messages: [{ role: "user", content: PROBLEM }],
    });
    expect(chat.status).toBe(200);
    expectMeasured(((await chat.json()) as Json).kvgraft.cost.energy);

    expect(await playgroundEnergy()).toMatch(
      /^\d+\.\d J \(\S+ Wh\), mean 150 W over \d+ samples 100 ms apart$/,
    );
  });
});
