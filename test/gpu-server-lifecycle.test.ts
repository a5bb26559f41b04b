/**
 * `kvgraft serve gpu` as a child process, the way `npm start` and operators run it: bad
 * configuration exits 2, readiness is a JSON line, SIGTERM drains (health says so, new work is
 * refused, the request in flight finishes or is cut short cleanly) and exits 0, and a restart on
 * the same data directory serves the blocks it had (warm again after warm start).
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createGpuClient, GpuError, type GpuNodeClient } from "../shared/gpu-client.js";
import type { GenerationResult } from "../shared/protocol.js";
import { kvgraftSourceArgs, supervise } from "../tools/process/supervise.js";
import { runCli } from "./helpers/cli.js";
import { syntheticModel } from "./helpers/models.js";

const root = join(import.meta.dirname, "..");
const SECRET = "lifecycle-secret-0123456789";
const model = syntheticModel("tiny-llama");
const dataDir = mkdtempSync(join(tmpdir(), "kvgraft-gpu-lifecycle-"));
const children: ChildProcess[] = [];

interface Node {
  child: ChildProcess;
  url: string;
  client: GpuNodeClient;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts `serve gpu` and resolves once it printed its JSON ready line. */
async function startNode(extra: string[] = []): Promise<Node> {
  const node = supervise({
    name: "serve gpu",
    args: kvgraftSourceArgs(
      ...["serve", "gpu", "--model", model, "--port", "0", "--data-dir", dataDir, "--context", "1024"],
      ...["--no-sandbox", "--json", ...extra],
    ),
    cwd: root,
    env: { ...process.env, KVGRAFT_GPU_SECRET: SECRET },
    ready: (line) => line as { url: string; model: { sha256: string }; engine: { id: string } },
  });
  children.push(node.child);
  const ready = await node.ready;
  expect(ready.model.sha256).toMatch(/^[0-9a-f]{64}$/);
  expect(ready.engine.id).toMatch(/^[0-9a-f]{64}$/);
  expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  return {
    child: node.child,
    url: ready.url,
    client: createGpuClient({ baseUrl: ready.url, secret: SECRET }),
    stderr: node.stderr,
    exited: node.exited.then(({ code }) => code),
  };
}

/** Starts a streamed generation and resolves once its first token arrived. */
async function streaming(node: Node, maxTokens: number) {
  let first!: () => void;
  const started = new Promise<void>((r) => {
    first = r;
  });
  let tokens = 0;
  const done = node.client
    .generateStream(
      { prompt: "A long story:", maxTokens },
      {
        onToken: () => {
          tokens++;
          first();
        },
      },
    )
    .then(
      (result): GenerationResult | GpuError => result,
      (err: unknown) => err as GpuError,
    );
  await started;
  return { done, tokens: () => tokens };
}

afterAll(() => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

describe("kvgraft serve gpu", () => {
  it("exits 2 with a clear message on bad configuration", () => {
    const noSecret = runCli(
      ["serve", "gpu", "--model", model, "--port", "0"],
      { KVGRAFT_GPU_SECRET: "" },
      60_000,
    );
    expect(noSecret.status).toBe(2);
    expect(noSecret.stderr).toMatch(/KVGRAFT_GPU_SECRET/);
    const badFlags = runCli(["serve", "gpu", "--model", model, "--kv", "q4", "--slots", "1"], {
      KVGRAFT_GPU_SECRET: SECRET,
    });
    expect(badFlags.status).toBe(2);
    expect(badFlags.stderr).toMatch(/kvType/);
    expect(badFlags.stderr).toMatch(/slots/);
    const noModel = runCli(["serve", "gpu", "--model", join(dataDir, "missing.gguf")], {
      KVGRAFT_GPU_SECRET: SECRET,
    });
    expect(noModel.status).toBe(2);
    expect(noModel.stderr).toMatch(
      /--model .*missing\.gguf does not exist; give the path of a GGUF model file/,
    );
  });

  it("drains on SIGTERM: health says draining, new work gets 503, the stream in flight completes, exit 0", async () => {
    const node = await startNode();
    const block = await node.client.deposit("Problem: 6 * 7. Solution: 6 * 7 = 42. Answer: 42.");
    const inFlight = await streaming(node, 120);
    node.child.kill("SIGTERM");
    // The signal arrives asynchronously; health reports the drain once it has.
    let health = await node.client.health();
    for (let i = 0; i < 100 && health.status !== "draining"; i++) {
      await new Promise((r) => setTimeout(r, 20));
      health = await node.client.health();
    }
    expect(health.status).toBe("draining");
    const refused = await node.client.generate({ prompt: "too late", maxTokens: 2 }).catch((e: unknown) => e);
    expect((refused as GpuError).status).toBe(503);
    expect((refused as GpuError).code).toBe("draining");
    const result = await inFlight.done;
    expect(result).not.toBeInstanceOf(Error);
    expect((result as GenerationResult).finishReason).toBe("maxTokens");
    expect((result as GenerationResult).tokensOut).toBe(120);
    expect(await node.exited).toBe(0);
    expect(node.stderr()).toMatch(/stopped/);

    // A restart re-indexes the store and serves the same block again, from RAM once warm start
    // has read it back (gpu-node/blocks/restore/warm-start.ts).
    const again = await startNode(["--drain-timeout-ms", "200"]);
    expect((await again.client.listBlocks()).map((m) => m.sha256)).toContain(block.sha256);
    while ((await again.client.health()).warmStart?.state !== "done")
      await new Promise((r) => setTimeout(r, 50));
    const graft = await again.client.graft({ blockId: block.sha256, query: " Check:", maxTokens: 4 });
    expect(graft.tier).toBe("warm");

    // A request longer than the drain timeout is cut short cleanly, and the process still exits 0.
    const long = await streaming(again, 800);
    again.child.kill("SIGTERM");
    const cut = await long.done;
    if (cut instanceof GpuError) expect(cut.code).toBe("shutting_down");
    else {
      expect(cut.finishReason).toBe("aborted");
      expect(cut.tokensOut).toBeLessThan(800);
    }
    expect(await again.exited).toBe(0);
  });
});
