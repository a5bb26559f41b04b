/**
 * Admin uploads through the bucket, end to end on real parts: s3rver on loopback, two
 * `kvgraft serve gpu` processes (one without a bucket makes the prebuilt block; the other shares
 * the bucket with the edge) and a real edge. The edge's upload grant carries presigned PUT URLs;
 * the block is registered only after a GPU node fetched and verified it; a refused upload
 * (altered bytes, a manifest whose probe does not reproduce) is deleted from the bucket.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kvgraftSourceArgs, supervise } from "../tools/process/supervise.js";
import { registerProblem } from "../edge/db/library.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { blockKeys, uploadKeys } from "../shared/bucket-keys.js";
import { createGpuClient, type GpuNodeClient } from "../shared/gpu-client.js";
import { silentLogger } from "../shared/http/logger.js";
import { normalizeProblem, problemFingerprint, problemTemplate } from "../shared/normalize.js";
import type { BlockManifest } from "../shared/protocol.js";
import { syntheticModel } from "./helpers/models.js";
import { startS3Server, type TestBucketServer } from "./helpers/s3-server.js";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions
type Json = Record<string, any>;

const root = join(import.meta.dirname, "..");
const SECRET = "bucket-upload-secret-0123456789";
const model = syntheticModel("tiny-llama");
const dirs: string[] = [];
const children: ChildProcess[] = [];
let s3: TestBucketServer;
let maker: GpuNodeClient;
let verifier: { url: string; client: GpuNodeClient };
let edge: EdgeServer & { adminKey: string };
let problemId: string;

function fresh(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `kvgraft-bucket-upload-${label}-`));
  dirs.push(dir);
  return dir;
}

function bucketEnv(): Record<string, string> {
  return {
    KVGRAFT_BUCKET_URL: s3.config.url,
    KVGRAFT_BUCKET_ACCESS_KEY_ID: s3.config.accessKeyId,
    KVGRAFT_BUCKET_SECRET_ACCESS_KEY: s3.config.secretAccessKey,
    KVGRAFT_BUCKET_REGION: s3.config.region,
  };
}

/** Starts `serve gpu` on a fresh data dir, with the bucket or without. */
async function startNode(withBucket: boolean): Promise<{ url: string; client: GpuNodeClient }> {
  const node = supervise({
    name: "serve gpu",
    args: kvgraftSourceArgs(
      ...["serve", "gpu", "--model", model, "--port", "0", "--data-dir", fresh("node"), "--context", "1024"],
      ...["--no-sandbox", "--json"],
    ),
    cwd: root,
    env: { ...process.env, KVGRAFT_GPU_SECRET: SECRET, ...(withBucket ? bucketEnv() : {}) },
    ready: (line) => line as { url: string },
  });
  children.push(node.child);
  const { url } = await node.ready;
  return { url, client: createGpuClient({ baseUrl: url, secret: SECRET }) };
}

beforeAll(async () => {
  s3 = await startS3Server();
  const [a, b] = await Promise.all([startNode(false), startNode(true)]);
  maker = a.client;
  verifier = b;
  const started = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(fresh("edge"), "edge.db")}`,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_GPU_URL: verifier.url,
      ...bucketEnv(),
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  if (!started.generatedAdminKey) throw new Error("expected a generated admin key");
  edge = Object.assign(started, { adminKey: started.generatedAdminKey });
  const problem = "What is 6 * 7?";
  const { template, params } = problemTemplate(problem);
  const { problem: row } = await registerProblem(edge.db, {
    normalizedText: normalizeProblem(problem),
    fingerprint: await problemFingerprint(problem),
    template,
    params,
  });
  problemId = row.id;
}, 120_000);

afterAll(async () => {
  await edge?.close();
  for (const child of children) child.kill("SIGKILL");
  await s3?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function admin(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${edge.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${edge.adminKey}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** A block made on the node without a bucket: its manifest and state bytes. */
async function prebuiltBlock(label: string): Promise<{ manifest: BlockManifest; bytes: Buffer }> {
  const text = Array.from({ length: 14 }, (_, k) => `${label} fact${k} alpha beta`).join(" ");
  const made = await maker.deposit(text);
  const { manifest, body } = await maker.openBlockFile(made.sha256);
  return { manifest, bytes: Buffer.from(await new Response(body).arrayBuffer()) };
}

/** Asks the edge for a grant, then PUTs the state and the manifest to its presigned URLs. */
async function upload(manifest: BlockManifest, bytes: Buffer): Promise<Json> {
  const res = await admin("POST", "/admin/uploads", {
    problemId,
    sha256: manifest.sha256,
    sizeBytes: manifest.sizeBytes,
  });
  expect(res.status).toBe(201);
  const grant = (await res.json()) as Json;
  expect(grant.bucket.uploadId).toMatch(/^[a-f0-9]{32}$/);
  // Presigned: no credentials of ours on these requests.
  const state = await fetch(grant.bucket.stateUrl, { method: "PUT", body: bytes });
  expect(state.status).toBe(200);
  const json = await fetch(grant.bucket.manifestUrl, { method: "PUT", body: JSON.stringify(manifest) });
  expect(json.status).toBe(200);
  return grant;
}

/** The node's verification of the upload, with the grant as its credential. */
function verify(grant: Json, manifest: BlockManifest, uploadId = grant.bucket.uploadId): Promise<Response> {
  return fetch(`${verifier.url}/v1/imports/bucket`, {
    method: "POST",
    headers: { authorization: `KvgraftUpload ${grant.grant}`, "content-type": "application/json" },
    body: JSON.stringify({ uploadId, sha256: manifest.sha256, sizeBytes: manifest.sizeBytes }),
  });
}

async function objectStatus(key: string): Promise<number> {
  const res = await s3.raw.fetch(`${s3.config.url}/${key}`, { method: "HEAD" });
  return res.status;
}

describe("admin uploads through presigned bucket URLs", () => {
  it("uploaded, verified by a GPU node, stored under blocks/, the upload deleted, then registered", async () => {
    const { manifest, bytes } = await prebuiltBlock("accepted");
    const grant = await upload(manifest, bytes);
    const keys = uploadKeys(grant.bucket.uploadId, manifest.sha256);
    expect(await objectStatus(keys.state)).toBe(200);
    // Not verified yet: the edge cannot register it.
    const early = await admin("POST", "/admin/blocks", { problemId, sha256: manifest.sha256 });
    expect(early.status).toBe(404);
    // A grant is good for its own upload only.
    const other = await verify(grant, manifest, "0".repeat(32));
    expect(other.status).toBe(403);

    const verified = await verify(grant, manifest);
    expect(verified.status).toBe(201);
    expect(((await verified.json()) as Json).sha256).toBe(manifest.sha256);
    expect(await objectStatus(blockKeys(manifest.sha256).manifest)).toBe(200);
    expect(await objectStatus(keys.state)).toBe(404);
    expect(await objectStatus(keys.manifest)).toBe(404);
    const registered = await admin("POST", "/admin/blocks", { problemId, sha256: manifest.sha256 });
    expect(registered.status).toBe(201);
    expect(((await registered.json()) as Json).block.sha256).toBe(manifest.sha256);
  });

  it.each([
    [
      "altered bytes",
      (m: BlockManifest, b: Buffer) => {
        const altered = Buffer.from(b);
        altered.writeUInt8(altered.readUInt8(altered.length - 9) ^ 1, altered.length - 9);
        return { manifest: m, bytes: altered, code: "bucket_block_corrupt" };
      },
    ],
    [
      "a probe hash the state does not reproduce",
      (m: BlockManifest, b: Buffer) => ({
        manifest: { ...m, probe: { ...m.probe, sha256: "e".repeat(64) } },
        bytes: b,
        code: "block_unverified",
      }),
    ],
  ])(
    "refuses an upload with %s, deletes it from the bucket, and nothing registers",
    async (label, damage) => {
      const made = await prebuiltBlock(`refused ${label}`);
      const { manifest, bytes, code } = damage(made.manifest, made.bytes);
      const grant = await upload(manifest, bytes);
      const res = await verify(grant, manifest);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(((await res.json()) as Json).error.code).toBe(code);
      const keys = uploadKeys(grant.bucket.uploadId, manifest.sha256);
      expect(await objectStatus(keys.state)).toBe(404);
      expect(await objectStatus(keys.manifest)).toBe(404);
      expect(await objectStatus(blockKeys(manifest.sha256).manifest)).toBe(404);
      const registered = await admin("POST", "/admin/blocks", { problemId, sha256: manifest.sha256 });
      expect(registered.status).toBe(404);
    },
  );
});
