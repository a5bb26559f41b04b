/**
 * Response schemas of the operations API (the cluster views and the flywheel queue), for
 * /openapi.json; the request schemas of the flywheel routes, which validate with them.
 */
import { z } from "zod";
import { sha256Schema, storageHealthSchema, tierBytesSchema } from "../shared/protocol.js";
import { flywheelStatuses } from "./db/schema.js";
import { nodeSchema } from "./schemas.js";

const isoDate = z.string().describe("ISO 8601 time");
const tier = z.enum(["hot", "warm", "cold"]);

export const placementSchema = z.object({
  blockId: sha256Schema,
  known: z.boolean(),
  replicas: z.number().int().describe("Copies each block should have (R)."),
  desired: z.array(z.string()).describe("The nodes the block should live on, best first."),
  holders: z.array(
    z.object({ nodeId: z.string(), live: z.boolean(), tier: tier.nullable(), desired: z.boolean() }),
  ),
  missing: z.array(z.string()).describe("Desired nodes that do not hold it yet."),
  route: z.array(z.object({ id: z.string(), tier })).describe("Where a graft would go, in order."),
});

const actionSchema = z.union([
  z.object({ kind: z.literal("copy"), blockId: sha256Schema, from: z.string(), to: z.string() }),
  z.object({ kind: z.literal("drop"), blockId: sha256Schema, node: z.string() }),
]);
const counts = z.object({ copies: z.number().int(), drops: z.number().int() });

export const rebalanceReportSchema = z.object({
  reason: z.string(),
  startedAt: isoDate,
  finishedAt: isoDate.nullable(),
  passes: z.number().int(),
  liveNodes: z.number().int(),
  blocks: z.number().int(),
  planned: counts,
  done: counts,
  failed: z.array(z.object({ action: actionSchema, error: z.string() })),
  bytesCopied: z.number().int(),
  unavailable: z.number().int().describe("Ready blocks no live node holds."),
  recordsFixed: z.number().int(),
});

export const rebalanceStatusSchema = z.object({
  running: z.boolean(),
  runs: z.number().int(),
  transfersInFlight: z.number().int(),
  maxConcurrentTransfers: z.number().int(),
  bucketFetches: z
    .number()
    .int()
    .describe(
      "Placements a node made by fetching the block from the bucket instead of a copy between nodes.",
    ),
  transferConcurrency: z.number().int(),
  current: rebalanceReportSchema.nullable(),
  last: rebalanceReportSchema.nullable(),
});

export const flywheelItemSchema = z.object({
  id: z.string(),
  problem: z.string(),
  fingerprint: sha256Schema,
  status: z.enum(flywheelStatuses),
  referenceAnswer: z.string().nullable(),
  attempts: z.number().int(),
  cost: z.record(z.string(), z.unknown()).nullable().describe("What the item's GPU requests cost."),
  result: z
    .record(z.string(), z.unknown())
    .nullable()
    .describe("Why it was accepted or rejected; a list counts its candidates instead of listing them."),
  createdAt: isoDate,
  updatedAt: isoDate,
});

export const flywheelProgressSchema = z.object({
  queued: z.number().int(),
  running: z.number().int(),
  accepted: z.number().int(),
  rejected: z.number().int(),
  done: z.number().int(),
  tokensIn: z.number(),
  tokensOut: z.number(),
  gpuMs: z.number(),
  energyWh: z.number().nullable(),
});

const answer = z.string().trim().min(1).max(1000);

export const flywheelListQuerySchema = z
  .object({
    status: z.enum(flywheelStatuses).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(100),
  })
  .strict();
export const flywheelEnqueueSchema = z
  .object({ problem: z.string().trim().min(1).max(20_000), referenceAnswer: answer.optional() })
  .strict();
export const flywheelAcceptSchema = z.object({ referenceAnswer: answer.optional() }).strict();
export const flywheelRejectSchema = z.object({ note: z.string().max(1000).optional() }).strict();

/** A node as `GET /admin/nodes` describes it: the registry row plus liveness, tiers and metrics. */
export const nodeViewSchema = nodeSchema.extend({
  lastHeartbeatAt: isoDate.nullable(),
  createdAt: isoDate.nullable(),
  live: z.boolean(),
  source: z.enum(["registry", "static"]).optional(),
  tiers: z
    .object({
      hot: z.array(z.string()),
      warm: z.array(z.string()),
      coldCount: z.number().int().nullable(),
      bytes: tierBytesSchema
        .nullable()
        .optional()
        .describe("Bytes of block state per tier; null from a node too old to report them."),
    })
    .optional(),
  queueDepth: z.number().int().optional(),
  metrics: z.record(z.string(), z.unknown()).optional(),
});

/** `GET /health` (edge/routes/health.routes.ts). */
export const healthResponseSchema = z.object({
  status: z
    .enum(["ok", "degraded", "down"])
    .describe(
      "ok: the database takes writes and the GPU node answers and runs programs; degraded (HTTP 200): the database refuses writes, the GPU node runs no programs (gpu.sandbox says why) or does not answer; down (HTTP 503): the database does not answer.",
    ),
  edge: z.object({ status: z.enum(["ok", "down"]), runtime: z.string(), uptimeS: z.number() }),
  db: z.object({
    status: z.enum(["ok", "down"]),
    ms: z.number(),
    error: z.string().optional(),
    /** Absent when the database is down, or when the probe write did not finish in time (`probe_timeout`). */
    writable: z
      .boolean()
      .optional()
      .describe(
        "Whether it takes a write: a probe write, and no write refused for storage in the last minute.",
      ),
    writeError: z
      .string()
      .optional()
      .describe(
        "Why not: database_full, database_read_only, database_io_error, or the probe's error; probe_timeout: unknown.",
      ),
    refusedAgoS: z.number().optional().describe("Seconds since a real write was refused for storage."),
    droppedLogLines: z.number().describe("Query-log lines this edge process could not write and dropped."),
  }),
  gpu: z.object({
    /** `degraded`: the node serves with a slot retired. */
    status: z.enum(["ok", "degraded", "down", "not_configured", "draining"]),
    ms: z.number().nullable(),
    error: z.string().optional(),
    model: z.string().optional(),
    slots: z.object({ total: z.number(), busy: z.number(), retired: z.number().optional() }).optional(),
    /** The node's storage (gpu-node/server/storage-state.ts); absent from older nodes. */
    storage: storageHealthSchema.optional(),
    /** The node's sandbox: `wasm`, `bwrap`, or `none` with the reason (programs are not run there). */
    sandbox: z
      .object({ isolation: z.string(), reason: z.string().optional() })
      .optional()
      .describe(
        "The node's sandbox: wasm, bwrap, or none with the reason (the node runs no programs, so the status is degraded).",
      ),
  }),
});
