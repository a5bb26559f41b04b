/**
 * How fast an HTTP client receives a block's state from s3rver on loopback (its own process):
 * `--mib` MiB of random bytes fetched as 8 MiB ranged GETs, `--parallel` at once, each body
 * copied into one buffer the size of the object (as a fetch into the warm arena copies it), with
 * three clients side by side in each run: fetch() (web streams), node:http (keep-alive agent) and
 * BulkHttpClient (gpu-node/blocks/bucket/http/http-get.ts, what the bucket fetch uses). Warm-up run first;
 * prints each run, then the medians (ms and GB/s). No engine, no hashing: the receive alone.
 *
 * Usage: node dist/bench/bucket-receive.js --s3rver-dir DIR [--mib 313] [--runs 5] [--parallel 4,8]
 * (DIR: scripts/stage-s3rver.sh's output, or the project root after npm ci)
 */
import { randomFillSync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { AwsClient } from "aws4fetch";
import { BulkHttpClient } from "../gpu-node/blocks/bucket/http/http-get.js";
import { quantile } from "../gpu-node/verify.js";
import { startS3rver } from "./bucket-serve.js";

const { values } = parseArgs({
  options: {
    "s3rver-dir": { type: "string", default: process.cwd() },
    mib: { type: "string", default: "313" },
    runs: { type: "string", default: "5" },
    parallel: { type: "string", default: "4,8" },
  },
});
const size = Number(values.mib) * 2 ** 20;
const runs = Number(values.runs);
const parallels = values.parallel.split(",").map(Number);
const PIECE = 8 * 2 ** 20;
const pieces = Math.ceil(size / PIECE);
const root = mkdtempSync(join(tmpdir(), "kvgraft-bench-receive-"));
const s3 = await startS3rver(values["s3rver-dir"], root);
const aws = new AwsClient({ ...s3.config, service: "s3", retries: 0 });
const url = `${s3.config.url}/receive.state`;
const arena = Buffer.allocUnsafe(size);

type Client = (start: number, end: number) => Promise<void>;
const signed = (start: number, end: number) =>
  aws.sign(url, { method: "GET", headers: { range: `bytes=${start}-${end}` } });

const viaFetch: Client = async (start, end) => {
  const req = await signed(start, end);
  const res = await fetch(req);
  if (res.status !== 206 || !res.body) throw new Error(`fetch: status ${res.status}`);
  let at = start;
  for await (const chunk of res.body) {
    arena.set(chunk, at);
    at += chunk.length;
  }
};
const agent = new Agent({ keepAlive: true });
const viaNodeHttp: Client = async (start, end) => {
  const req = await signed(start, end);
  await new Promise<void>((resolve, reject) => {
    const r = request(req.url, { headers: Object.fromEntries(req.headers), agent }, (res) => {
      let at = start;
      res.on("data", (chunk: Buffer) => {
        chunk.copy(arena, at);
        at += chunk.length;
      });
      res.once("end", () =>
        res.statusCode === 206 ? resolve() : reject(new Error(`node:http: ${res.statusCode}`)),
      );
      res.once("error", reject);
    });
    r.once("error", reject);
    r.end();
  });
};
const bulk = new BulkHttpClient();
const viaBulk: Client = async (start, end) => {
  const req = await signed(start, end);
  const res = await bulk.get(new URL(req.url), req.headers, new AbortController().signal);
  if (res.status !== 206) throw new Error(`BulkHttpClient: status ${res.status}`);
  let at = start;
  await res.consume((view) => {
    view.copy(arena, at);
    at += view.length;
  });
};
const clients: [string, Client][] = [
  ["fetch", viaFetch],
  ["node:http", viaNodeHttp],
  ["BulkHttpClient", viaBulk],
];

/** The whole object in 8 MiB pieces, `parallel` GETs at once; ms. */
async function receive(client: Client, parallel: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  const connection = async () => {
    while (next < pieces) {
      const start = PIECE * next++;
      await client(start, Math.min(start + PIECE, size) - 1);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, pieces) }, connection));
  return performance.now() - started;
}

try {
  const body = randomFillSync(Buffer.allocUnsafe(size));
  const put = await aws.fetch(url, { method: "PUT", body });
  if (!put.ok) throw new Error(`PUT: status ${put.status}`);
  const expected = body.subarray(0, 4096);
  const timings = new Map<string, number[]>();
  for (let run = 0; run <= runs; run++) {
    const line: Record<string, number | string> = { run: run === 0 ? "warm-up" : run };
    for (const parallel of parallels)
      for (const [name, client] of clients) {
        arena.fill(0, 0, 4096);
        const ms = await receive(client, parallel);
        if (!arena.subarray(0, 4096).equals(expected)) throw new Error(`${name}: wrong bytes`);
        line[`${name} x${parallel}`] = Math.round(ms);
        if (run > 0)
          timings.set(`${name} x${parallel}`, [...(timings.get(`${name} x${parallel}`) ?? []), ms]);
      }
    console.log(JSON.stringify(line));
  }
  const medians = Object.fromEntries(
    [...timings].map(([label, ms]) => {
      const m = quantile(ms, 0.5);
      return [label, { ms: Number(m.toFixed(1)), GBps: Number((size / m / 1e6).toFixed(2)) }];
    }),
  );
  console.log(JSON.stringify({ mib: Number(values.mib), runs, pieceMiB: PIECE / 2 ** 20, medians }));
} finally {
  bulk.close();
  agent.destroy();
  s3.stop();
  rmSync(root, { recursive: true, force: true });
}
