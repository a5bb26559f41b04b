/**
 * A loopback GPU node for edge tests that need no model: `/v1/sandbox/run` is the real sandbox
 * (or, without one, a 501 `sandbox_unavailable`, as the real node answers), a deposit (`POST /v1/blocks`) answers a manifest
 * for the text (what a node without a model can truthfully hash), `/v1/graft` a fixed generation
 * and `/v1/solve` an unsure sampled solve (both as server-sent events with `stream: true`, energy
 * not measured); `/health` reports the deposited blocks as hot and on disk, with their manifests'
 * sizes as the tier bytes. Imports
 * (`/v1/imports*`, with an upload grant header) take a block's chunks, check each one's SHA-256 and
 * keep the manifest (served by `GET /v1/blocks/:id`, removed by `DELETE`); the grant itself is checked by the real node's
 * tests, not here. It records the work paths it served.
 */
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { localProgramRunner } from "../../cli/commands/eval.js";
import { blockManifest } from "../../shared/block-manifest.js";
import { sha256Hex } from "../../shared/hash.js";
import { type BlockManifest, gpuPaths } from "../../shared/protocol.js";

const WORK = new Set<string>([gpuPaths.graft, gpuPaths.sandboxRun, gpuPaths.generate, gpuPaths.solve]);

/** A block manifest for a deposited text; `sizeBytes` is the state size it claims. */
export async function manifestFor(text: string, sizeBytes = 1): Promise<BlockManifest> {
  const hex = (s: string) => sha256Hex(s);
  return blockManifest(
    {
      tokenCount: 1,
      tokensSha256: await hex(`tokens:${text}`),
      textSha256: await hex(text),
      model: { sha256: await hex("model"), sizeBytes: 1, architecture: "llama", name: "loopback" },
      engine: {
        nodeLlamaCpp: "3.21.1",
        llamaCppRelease: "b0",
        backend: "cpu",
        gpuName: null,
        computeCapability: null,
        context: {
          kvKeyType: "f16",
          kvValueType: "f16",
          flashAttention: false,
          swaFullCache: true,
          batchSize: 512,
          sequences: 1,
        },
        id: await hex("engine"),
      },
      probe: { token: 0, sha256: await hex("probe") },
      createdAt: new Date(0).toISOString(),
    },
    { sha256: await hex(`state:${text}`), sizeBytes },
  );
}

export interface LoopbackGpu {
  url: string;
  /** Work paths served, in order. */
  requests: string[];
  close(): Promise<void>;
}

/**
 * Starts the loopback node on 127.0.0.1, with a real sandbox unless `sandbox` is false; its
 * deposits' manifests claim `depositBytes` of state (default 1).
 */
export async function startLoopbackGpu(
  options: { sandbox?: boolean; depositBytes?: number } = {},
): Promise<LoopbackGpu> {
  const runner = options.sandbox === false ? null : await localProgramRunner();
  const requests: string[] = [];
  const hot: string[] = [];
  const manifests = new Map<string, Awaited<ReturnType<typeof manifestFor>>>();
  const imports = new Map<string, { manifest: Awaited<ReturnType<typeof manifestFor>>; chunks: number }>();
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => {
      parts.push(c);
    });
    req.on("end", async () => {
      const raw = Buffer.concat(parts);
      const body = raw.toString("utf8");
      if (WORK.has(req.url ?? "")) requests.push(req.url ?? "");
      const send = (status: number, value: unknown) =>
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
      /** A streamed answer (`stream: true`): these texts as token events, then `last` with the value. */
      const sendEvents = (last: string, texts: string[]) => (status: number, value: unknown) => {
        res.writeHead(status, { "content-type": "text/event-stream" });
        for (const [i, text] of texts.entries())
          res.write(`event: token\ndata: ${JSON.stringify({ token: i, text })}\n\n`);
        res.end(`event: ${last}\ndata: ${JSON.stringify(value)}\n\n`);
      };
      if (req.url === gpuPaths.sandboxRun) {
        if (!runner)
          return send(501, { error: { code: "sandbox_unavailable", message: "no sandbox on this node" } });
        const { program, params, expect } = JSON.parse(body);
        return send(200, await runner.runProgram({ program, params, expect }));
      }
      if (req.url === gpuPaths.blocks && req.method === "POST") {
        const manifest = await manifestFor(JSON.parse(body).text, options.depositBytes);
        if (!hot.includes(manifest.sha256)) hot.push(manifest.sha256);
        manifests.set(manifest.sha256, manifest);
        return send(200, manifest);
      }
      const imported = await importStep(req.method ?? "", req.url ?? "", req.headers, raw);
      if (imported) return send(imported.status, imported.body);
      const known = /^\/v1\/blocks\/([0-9a-f]{64})$/.exec(req.url ?? "")?.[1];
      if (known && req.method === "GET" && manifests.has(known)) return send(200, manifests.get(known));
      if (known && req.method === "DELETE" && manifests.has(known)) {
        manifests.delete(known);
        hot.splice(hot.indexOf(known), 1);
        return res.writeHead(204).end();
      }
      if (req.url === gpuPaths.health) {
        const { model, engine } = await manifestFor("");
        return send(200, {
          status: "ok",
          model,
          engine,
          slots: { total: 2, busy: 0 },
          tiers: {
            hot,
            warm: [],
            coldCount: hot.length,
            bytes: { hot: heldBytes(), warm: 0, cold: heldBytes() },
          },
          queue: { depth: 0, capacity: 8 },
          uptimeS: 1,
        });
      }
      if (req.url === gpuPaths.graft) {
        const { blockId, stream } = JSON.parse(body);
        return (stream ? sendEvents("summary", ["grafted\n", "42"]) : send)(200, {
          text: "grafted\n42",
          tokens: [7, 8],
          outputSha256: "e".repeat(64),
          blockSha256: blockId,
          tier: "hot",
          tokensIn: 5,
          tokensOut: 2,
          timings: { restoreMs: 0.1, queryMs: 1, decodeMs: 1, totalMs: 2.1 },
          finishReason: "maxTokens",
        });
      }
      if (req.url === gpuPaths.solve)
        return (JSON.parse(body).stream ? sendEvents("solved", ["Let me think.", " No idea."]) : send)(200, {
          answer: null,
          confidence: 0,
          unsure: true,
          programsAgree: false,
          votes: [],
          samples: [],
          tokensIn: 5,
          tokensOut: 2,
          gpuMs: 1,
          sandboxMs: 0,
          totalMs: 1,
          energy: null,
          outputSha256: "e".repeat(64),
          isolation: "none",
        });
      send(404, { error: { code: "not_found", message: "not here" } });
    });
  });
  /** Bytes of the blocks held (each is in a slot and on disk). */
  const heldBytes = () => hot.reduce((n, id) => n + (manifests.get(id)?.sizeBytes ?? 0), 0);
  /** One step of an import, or null when the request is not one. */
  async function importStep(
    method: string,
    url: string,
    headers: Record<string, string | string[] | undefined>,
    raw: Buffer,
  ): Promise<{ status: number; body: unknown } | null> {
    if (!url.startsWith(gpuPaths.imports)) return null;
    if (!headers["x-kvgraft-upload-grant"])
      return { status: 401, body: { error: { code: "grant_missing", message: "no upload grant" } } };
    if (method === "POST" && url === gpuPaths.imports) {
      const { manifest, sizeBytes, chunkBytes } = JSON.parse(raw.toString("utf8"));
      const importId = (await sha256Hex(`import:${manifest.sha256}`)).slice(0, 32);
      const chunkCount = Math.ceil(sizeBytes / chunkBytes);
      imports.set(importId, { manifest, chunks: chunkCount });
      return { status: 201, body: { importId, chunkBytes, chunkCount, idleTimeoutS: 60 } };
    }
    const [, id, rest] = /^\/v1\/imports\/([0-9a-f]{32})\/(.*)$/.exec(url) ?? [];
    const session = imports.get(id ?? "");
    if (!session) return { status: 404, body: { error: { code: "import_not_found", message: "no import" } } };
    if (method === "PUT" && rest?.startsWith("chunks/")) {
      const sha = createHash("sha256").update(raw).digest("hex");
      if (sha !== headers["x-kvgraft-chunk-sha256"])
        return {
          status: 422,
          body: { error: { code: "chunk_hash_mismatch", message: "chunk hash differs" } },
        };
      return { status: 200, body: { index: Number(rest.slice(7)), received: 1, chunkCount: session.chunks } };
    }
    if (method === "POST" && rest === "commit") {
      manifests.set(session.manifest.sha256, session.manifest);
      if (!hot.includes(session.manifest.sha256)) hot.push(session.manifest.sha256);
      return { status: 201, body: session.manifest };
    }
    return null;
  }

  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
