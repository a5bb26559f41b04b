/**
 * The GPU node's Node.js entry: opens the engine, the block service (which re-indexes the store)
 * and the sandbox, serves the app on @hono/node-server, and drains cleanly on request.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createAdaptorServer } from "@hono/node-server";
import { type Heartbeat, type HeartbeatLoop, nodeIdSchema, startHeartbeat } from "../../shared/heartbeat.js";
import { createLogger, type Logger } from "../../shared/http/logger.js";
import { BlockService } from "../blocks/block-service.js";
import { BlockBucket } from "../blocks/bucket/bucket.js";
import { type GpuNodeConfig, type GpuNodeInput, resolveGpuNodeConfig } from "../config.js";
import { Engine } from "../engine/engine.js";
import { SandboxPool } from "../sandbox/pool.js";
import { ISOLATION_TEXT } from "../sandbox/sandbox.js";
import { createGpuApp, type GpuApp } from "./app.js";

export type { GpuNodeConfig, GpuNodeInput } from "../config.js";

/** A running node. */
export interface RunningGpuNode {
  url: string;
  /** What it runs with, resolved from its environment and options. */
  config: GpuNodeConfig;
  engine: Engine;
  blocks: BlockService;
  service: GpuApp;
  /** This node's id at the edge. */
  nodeId: string;
  /** The heartbeat loop, when an edge URL is configured. */
  heartbeat: HeartbeatLoop | null;
  /** Drains (new work 503, in-flight work finishes or is aborted at the timeout), then closes everything. */
  stop(): Promise<void>;
}

/**
 * The node's one entry: resolves its configuration from `input` (its environment and options;
 * a ConfigError when it does not fit), opens everything and listens; on failure, whatever was
 * opened is closed again. Logs go to `logger`, by default JSON lines on stderr at the configured level.
 */
export async function startGpuNode(input: GpuNodeInput, logger?: Logger): Promise<RunningGpuNode> {
  const config = resolveGpuNodeConfig(input);
  const log = logger ?? createLogger({ level: config.logLevel });
  const engine = await Engine.open({
    modelPath: config.modelPath,
    slots: config.slots,
    contextSize: config.contextSize,
    kvType: config.kvType,
    binary: config.binary,
    ...(config.threads ? { threads: config.threads } : {}),
    ...(config.stepFill !== undefined ? { stepFill: config.stepFill } : {}),
    ...(config.greedyPick !== undefined ? { greedyPick: config.greedyPick } : {}),
  });
  let blocks: BlockService | undefined;
  try {
    blocks = await BlockService.open({
      engine,
      dataDir: config.dataDir,
      ...(config.bucket
        ? {
            bucket: new BlockBucket({
              ...config.bucket,
              // Tags the manifests this node uploads; a fetch trusts tags under either secret.
              manifestSecrets: [config.secret, config.previousSecret].filter((s): s is string => !!s),
            }),
          }
        : {}),
      ...(config.diskBudgetBytes ? { diskBudgetBytes: config.diskBudgetBytes } : {}),
      ...(config.warmBudgetBytes !== undefined ? { warmBudgetBytes: config.warmBudgetBytes } : {}),
      log,
    });
    const openedBlocks = blocks;
    let sandboxUnavailable = "disabled (--no-sandbox)";
    const sandbox = config.sandbox
      ? await SandboxPool.create({ backend: config.sandboxBackend }).catch((err: Error) => {
          sandboxUnavailable = err.message;
          log.warn(
            "sandbox unavailable: programs are not run (deposits, transfers, solves answer 501 sandbox_unavailable)",
            {
              reason: err.message,
            },
          );
          return undefined;
        })
      : undefined;
    if (sandbox) log.info(`sandbox: isolation ${sandbox.isolation} (${ISOLATION_TEXT[sandbox.isolation]})`);
    const service = createGpuApp({
      blocks,
      secret: config.secret,
      ...(config.previousSecret ? { previousSecret: config.previousSecret } : {}),
      fingerprints: { model: engine.modelFingerprint, engine: engine.engineFingerprint },
      dataDir: config.dataDir,
      limits: config.maxWaiting !== undefined ? { maxWaiting: config.maxWaiting } : {},
      logger: log,
      // A block listed while its fetched file is committed is served once the file is there.
      blockFile: async (id) => {
        await openedBlocks.disk.committed(id);
        return openedBlocks.store.checkedStatePath(id);
      },
      ...(sandbox ? { sandbox } : { sandboxUnavailable }),
      ...(config.access ? { access: config.access } : {}),
      ...(engine.llama.gpu
        ? {
            vram: async () => {
              const v = await engine.llama.getVramState();
              return { usedBytes: v.used, totalBytes: v.total };
            },
          }
        : {}),
    });
    const server = createAdaptorServer({ fetch: service.app.fetch }) as Server;
    // Idle keep-alive sockets outlive the clients' own (undici: 4 s): no reuse-while-closing race.
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
    const openBlocks = blocks;
    const url = `http://${host}:${address.port}`;
    const nodeId = config.nodeId ?? (await persistentNodeId(config.dataDir));
    const publicUrl = config.publicUrl ?? url;
    const report = () => heartbeatReport(nodeId, publicUrl, engine, openBlocks, service);
    const heartbeat = config.edgeUrl
      ? startHeartbeat({
          edgeUrl: config.edgeUrl,
          // During a rotation the edge may not know the new secret yet, but it accepts the
          // previous one until the rotation ends (docs/deploy.md).
          secret: config.previousSecret ?? config.secret,
          intervalMs: config.heartbeatMs,
          report,
          logger: log,
        })
      : null;
    // After the node is ready, never before: grafts are served while the warm tier fills, and
    // the edge hears of the warm blocks from a heartbeat sent as soon as it is full.
    if (config.warmStart) void openBlocks.warmStart.start(log).then(() => heartbeat?.beat());
    else openBlocks.warmStart.disable();
    let stopping: Promise<void> | undefined;
    return {
      url,
      config,
      engine,
      blocks: openBlocks,
      service,
      nodeId,
      heartbeat,
      stop: () => {
        stopping ??= (async () => {
          service.drain();
          // Tell the edge first, so it routes elsewhere while this node drains.
          await heartbeat?.stop(report());
          if (!(await service.waitIdle(config.drainTimeoutMs))) {
            log.warn("drain: requests still running at the drain timeout; aborting them", {
              inFlight: service.inFlight,
              drainTimeoutMs: config.drainTimeoutMs,
            });
            service.abortAll();
            await service.waitIdle(5_000);
          }
          await new Promise<void>((resolve) => {
            server.close(() => resolve());
            if ("closeAllConnections" in server) server.closeAllConnections();
          });
          await service.close();
          sandbox?.close();
          await openBlocks.close();
          await engine.dispose();
        })();
        return stopping;
      },
    };
  } catch (err) {
    await blocks?.close().catch(() => undefined);
    await engine.dispose();
    throw err;
  }
}

/** The heartbeat a node sends: where it is, what it runs, its capacity and what its tiers hold. */
function heartbeatReport(
  nodeId: string,
  url: string,
  engine: Engine,
  blocks: BlockService,
  service: Pick<GpuApp, "draining" | "queue">,
): Heartbeat {
  const s = blocks.snapshot();
  return {
    id: nodeId,
    url,
    status: service.draining ? "draining" : "ok",
    model: engine.modelFingerprint,
    engine: engine.engineFingerprint,
    capacity: { slots: s.slots.total, queueCapacity: service.queue.capacity, tiers: ["hot", "warm", "cold"] },
    tiers: {
      hot: s.hot,
      warm: s.warm,
      coldCount: s.coldCount,
      bytes: s.bytes,
      ...corruptStill(s.warmStart.corrupt, blocks),
    },
    queue: { depth: service.queue.depth, capacity: service.queue.capacity },
  };
}

/**
 * The blocks warm start found damaged that the node still lacks (once a sound copy is stored
 * again, it is no longer reported, or the edge would drop that copy's record), at most the
 * heartbeat's limit.
 */
function corruptStill(corrupt: string[], blocks: BlockService): { corrupt?: string[] } {
  const missing = corrupt.filter((sha) => !blocks.store.has(sha)).slice(0, 10_000);
  return missing.length ? { corrupt: missing } : {};
}

/** The node id kept in the data directory (generated on first start), so restarts keep it. */
async function persistentNodeId(dataDir: string): Promise<string> {
  const path = join(dataDir, "node-id");
  const existing = (await readFile(path, "utf8").catch(() => "")).trim();
  if (nodeIdSchema.safeParse(existing).success) return existing;
  const id = `gpu-${randomBytes(6).toString("hex")}`;
  await mkdir(dataDir, { recursive: true });
  await writeFile(path, `${id}\n`, { mode: 0o644 });
  return id;
}
