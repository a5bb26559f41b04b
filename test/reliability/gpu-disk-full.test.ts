/**
 * A GPU node whose disk is full (issue 35, item 4), through `kvgraft serve gpu` as a child (with
 * its sandbox) on a small tmpfs filled to ENOSPC (root only; skipped with the reason otherwise):
 * deposits fail with a clear 507 at the node and 503 `gpu_storage_full` at the edge; signed
 * requests that need no disk (listings, sandbox runs, generations, grafts, and through the edge a
 * program transfer and a model answer) are still served once the nonce log cannot grow (the
 * nonces kept in memory); both /health endpoints say the storage is failing; and a request
 * accepted that way cannot be replayed to the node restarted on the same data dir.
 */
import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeServer, startEdgeServer } from "../../edge/runtime/node.js";
import { GpuError } from "../../shared/gpu-client.js";
import { silentLogger } from "../../shared/http/logger.js";
import { gpuPaths } from "../../shared/protocol.js";
import { signRequest } from "../../shared/signing.js";
import { syntheticModel } from "../helpers/models.js";
import { type GpuChild, killHard, startGpuChild, until } from "./helpers.js";
import { largeText } from "./kill-loop.js";

const SECRET = "reliability-secret-0123456789";
const model = syntheticModel("tiny-llama");
const temp = mkdtempSync(join(tmpdir(), "kvgraft-rel-full-"));
const mnt = join(temp, "small-fs");
const nodes: GpuChild[] = [];
let mounted = false;
let edge: EdgeServer | undefined;

beforeAll(() => {
  mkdirSync(mnt, { recursive: true });
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=400k", "tmpfs", mnt], { stdio: "pipe" });
    mounted = true;
  } catch (err) {
    process.stderr.write(
      `GPU disk-full test skipped: mount -t tmpfs not permitted (${(err as Error).message})\n`,
    );
  }
});
afterAll(async () => {
  await edge?.close();
  for (const n of nodes) await killHard(n);
  if (mounted) execFileSync("umount", [mnt]);
  rmSync(temp, { recursive: true, force: true });
});

async function node(): Promise<GpuChild> {
  const n = await startGpuChild({ modelPath: model, dataDir: mnt, secret: SECRET, sandbox: true });
  nodes.push(n);
  return n;
}

/** Writes a file on the tmpfs until it is full; returns its path. */
function fill(): string {
  const filler = join(mnt, "filler");
  const fd = openSync(filler, "w");
  try {
    for (;;) writeSync(fd, Buffer.alloc(4096));
  } catch (err) {
    expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
  } finally {
    closeSync(fd);
  }
  return filler;
}

/** A signed `GET /v1/blocks`, as headers that can be sent again. */
const signedList = () => signRequest({ secret: SECRET, method: "GET", path: gpuPaths.blocks });
const send = (
  n: GpuChild,
  headers: Record<string, string>,
  // biome-ignore lint/suspicious/noExplicitAny: checked by the assertions
): Promise<{ status: number; body: any }> =>
  fetch(`${n.url}${gpuPaths.blocks}`, { headers }).then(async (r) => ({
    status: r.status,
    body: await r.json(),
  }));
/** Status and error code of a GpuNodeClient call (200 when it resolved). */
const outcome = (p: Promise<unknown>): Promise<{ status: number; code?: string }> =>
  p.then(
    () => ({ status: 200 }),
    (e: unknown) => {
      if (!(e instanceof GpuError)) throw e;
      return { status: e.status, code: e.code };
    },
  );
const APPLES = (count: number) =>
  `Sam buys ${count} apples at $0.75 each and pays with a $20 bill. How much change does he get, in dollars?`;
const CHANGE =
  "count, price, paid = PARAMS\nx = round(paid - count * price, 2)\nprint(int(x) if x == int(x) else x)\n";
/** A request to the edge with its admin key. */
async function api(
  path: string,
  body: object,
  // biome-ignore lint/suspicious/noExplicitAny: checked by the assertions
): Promise<{ status: number; retryAfter: string | null; body: any }> {
  const res = await fetch(`${edge?.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${edge?.generatedAdminKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
}
// biome-ignore lint/suspicious/noExplicitAny: checked by the assertions
const health = async (url: string): Promise<any> => (await fetch(`${url}/health`)).json();

describe("a GPU node on a full disk", () => {
  it("serves what needs no disk, says so in /health, and refuses a replay after a restart", async (ctx) => {
    if (!mounted) return ctx.skip("mount -t tmpfs is not permitted here (needs root / CAP_SYS_ADMIN)");
    const first = await node();
    edge = await startEdgeServer({
      env: {
        LIBSQL_URL: `file:${join(temp, "edge.db")}`,
        KVGRAFT_GPU_URL: first.url,
        KVGRAFT_GPU_SECRET: SECRET,
        KVGRAFT_SOLVE_MAX_TOKENS: "2",
      },
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger,
    });
    const small = await first.client.deposit("Problem: 2 + 2. Answer: 4.");
    // A verified parametric program in the edge's library, so that new numbers are a transfer.
    const apples = await api("/admin/solutions", {
      problem: APPLES(12),
      solution: "12 apples at $0.75 cost $9; $20 - $9 = $11.",
      program: CHANGE,
      answer: "11",
    });
    expect(apples.status, JSON.stringify(apples.body)).toBe(201);
    expect((await health(first.url)).storage).toMatchObject({ status: "ok", nonceLog: "ok" });
    const filler = fill();

    const deposit = await first.client.deposit(largeText("full", 40)).catch((e: unknown) => e);
    expect(deposit).toBeInstanceOf(GpuError);
    expect((deposit as GpuError).status).toBe(507);

    // Far more signed requests than the nonce log's last page has room for: from here on every
    // nonce is kept in memory only. Each kind of request is tried after that and its status kept,
    // so that one failure shows what every kind answers.
    const listings = new Map<number, number>();
    for (let i = 0; i < 150; i++) {
      const { status } = await send(first, await signedList());
      listings.set(status, (listings.get(status) ?? 0) + 1);
    }
    const seen = {
      listings: Object.fromEntries(listings),
      sandboxRun: await outcome(
        first.client.sandboxRun({ program: "print(sum(PARAMS))", params: [40, 2], expect: "42" }),
      ),
      generate: await outcome(first.client.generate({ prompt: "Problem: 3 + 3. Answer:", maxTokens: 2 })),
      graft: await outcome(first.client.graft({ blockId: small.sha256, query: "Again:", maxTokens: 2 })),
      edgeTransfer: await api("/v1/solve", { problem: APPLES(15) }).then((r) => ({
        status: r.status,
        source: r.body.source,
        answer: r.body.answer,
        verified: r.body.verified,
      })),
      edgeModel: await api("/v1/solve", { problem: "Say something about a full disk.", maxTokens: 2 }).then(
        (r) => ({ status: r.status, source: r.body.source }),
      ),
      edgeDeposit: await api("/admin/solutions", {
        problem: APPLES(13).replace("apples", "pears"),
        solution: "13 pears at $0.75 cost $9.75; $20 - $9.75 = $10.25.",
        program: CHANGE,
        answer: "10.25",
      }).then((r) => ({ status: r.status, code: r.body.error?.code, retryAfter: r.retryAfter })),
    };
    expect(seen).toEqual({
      listings: { 200: 150 },
      sandboxRun: { status: 200 },
      generate: { status: 200 },
      graft: { status: 200 },
      edgeTransfer: { status: 200, source: "transfer", answer: "8.75", verified: true },
      edgeModel: { status: 200, source: "model" },
      edgeDeposit: { status: 503, code: "gpu_storage_full", retryAfter: "60" },
    });
    const accepted = await signedList();
    expect((await send(first, accepted)).status).toBe(200);
    expect((await send(first, accepted)).status).toBe(401);

    const gpuHealth = await health(first.url);
    expect(gpuHealth.status).toBe("degraded");
    expect(gpuHealth.storage).toMatchObject({ status: "failing", nonceLog: "memory", freeBytes: 0 });
    expect(["disk_full", "storage_write_failed"]).toContain(gpuHealth.storage.lastFailure.code);
    const edgeHealth = await health(edge.url);
    expect(edgeHealth.status).toBe("degraded");
    expect(edgeHealth.gpu).toMatchObject({ status: "degraded", storage: { nonceLog: "memory" } });

    // Restarted on the same, still full, data dir: the request accepted in memory only is refused.
    await killHard(first);
    const second = await node();
    const replay = await send(second, accepted);
    expect(replay.status).toBe(401);
    expect(replay.body.error.code).toBe("signature_replayed");
    await new Promise((r) => setTimeout(r, 1100));
    expect((await send(second, await signedList())).status).toBe(200);
    expect((await second.client.verifyBlock(small.sha256)).ok).toBe(true);

    // Room again: the log catches up (a compaction, tried at most once a second while behind).
    rmSync(filler);
    await until(
      async () =>
        (await send(second, await signedList())).status === 200 &&
        (await health(second.url)).storage.status === "ok",
      5000,
      "the storage ok again",
    );
    expect((await health(second.url)).storage).toMatchObject({ status: "ok", nonceLog: "ok" });
  }, 180_000);
});
