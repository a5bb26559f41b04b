/**
 * Library metadata schema (drizzle, SQLite dialect; libSQL locally and on Turso).
 * Timestamps are integer milliseconds; JSON columns hold records the edge reads back whole.
 * The FTS5 index `problems_fts` lives in a custom migration (drizzle does not model virtual
 * tables) and is kept in sync with `problems` by triggers: a migration that rebuilds `problems`
 * must recreate those triggers (see migrations/0001_problems_fts.sql).
 */
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

const createdAt = () =>
  integer("created_at", { mode: "timestamp_ms" })
    .notNull()
    .$defaultFn(() => new Date());

/**
 * A normalized problem; `template` is its text with every number a `#` slot, `params` those numbers:
 * exact literals (`"12"`, `"0.75"`, shared/normalize `literals`), or numbers in rows from before.
 */
export const problems = sqliteTable(
  "problems",
  {
    id: text("id").primaryKey(),
    normalizedText: text("normalized_text").notNull(),
    fingerprint: text("fingerprint").notNull().unique(),
    template: text("template").notNull(),
    params: text("params", { mode: "json" }).$type<(number | string)[]>().notNull(),
    /**
     * The shared/normalize NORMALIZE_VERSION that produced `normalizedText`, `fingerprint` and
     * `template`: rows of an older normalization never answer (it merged problems that differ);
     * depositing the problem again brings a row up to date.
     */
    normalizeVersion: integer("normalize_version").notNull().default(1),
    createdAt: createdAt(),
  },
  (t) => [index("problems_template_idx").on(t.template)],
);

/**
 * A worked solution of a problem; `verified` mirrors the verdict inside `verification`. Solutions
 * of a problem are numbered 1, 2, ... (`version`); a newer verified one supersedes the one that
 * answered before, which stays for audit with `superseded_at` and `superseded_by` set and never
 * answers again.
 */
export const solutions = sqliteTable(
  "solutions",
  {
    id: text("id").primaryKey(),
    problemId: text("problem_id")
      .notNull()
      .references(() => problems.id),
    version: integer("version").notNull().default(1),
    worked: text("worked").notNull(),
    program: text("program"),
    answer: text("answer").notNull(),
    parametric: integer("parametric", { mode: "boolean" }).notNull().default(false),
    verified: integer("verified", { mode: "boolean" }).notNull().default(false),
    verification: text("verification", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    createdAt: createdAt(),
    supersededAt: integer("superseded_at", { mode: "timestamp_ms" }),
    supersededBy: text("superseded_by"),
  },
  (t) => [
    index("solutions_problem_idx").on(t.problemId, t.verified),
    uniqueIndex("solutions_problem_version_idx").on(t.problemId, t.version),
  ],
);

/** `superseded`: made from a solution a newer version replaced (kept as a record, never routed). */
export const blockStates = ["building", "ready", "quarantined", "superseded"] as const;
export type BlockState = (typeof blockStates)[number];

/** A KV-state block, named by the SHA-256 of its bytes; manifest fields used for routing are columns. */
export const blocks = sqliteTable(
  "blocks",
  {
    sha256: text("sha256").primaryKey(),
    problemId: text("problem_id")
      .notNull()
      .references(() => problems.id),
    tokenCount: integer("token_count").notNull(),
    tokensSha256: text("tokens_sha256").notNull(),
    textSha256: text("text_sha256").notNull(),
    modelFingerprint: text("model_fingerprint").notNull(),
    engineFingerprint: text("engine_fingerprint").notNull(),
    manifest: text("manifest", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    state: text("state", { enum: blockStates }).notNull(),
    nodeId: text("node_id"),
    createdAt: createdAt(),
  },
  (t) => [index("blocks_problem_idx").on(t.problemId), index("blocks_node_idx").on(t.nodeId)],
);

/**
 * Where copies of a block are: one row per (block, node) once the node confirmed it holds the
 * block (a deposit there, or an import hash-checked and probe-verified there). `blocks.node_id`
 * stays the node that made the block.
 */
export const blockReplicas = sqliteTable(
  "block_replicas",
  {
    blockSha256: text("block_sha256")
      .notNull()
      .references(() => blocks.sha256),
    nodeId: text("node_id").notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.blockSha256, t.nodeId] }), index("block_replicas_node_idx").on(t.nodeId)],
);

export const nodeStatuses = ["up", "down"] as const;
export type NodeStatus = (typeof nodeStatuses)[number];

/** A registered GPU node; heartbeats refresh `last_heartbeat_at` and reset `missed_heartbeats`. */
export const gpuNodes = sqliteTable("gpu_nodes", {
  id: text("id").primaryKey(),
  url: text("url").notNull(),
  modelFingerprint: text("model_fingerprint").notNull(),
  engineFingerprint: text("engine_fingerprint").notNull(),
  capacity: text("capacity", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
  health: text("health", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
  status: text("status", { enum: nodeStatuses }).notNull(),
  lastHeartbeatAt: integer("last_heartbeat_at", { mode: "timestamp_ms" }).notNull(),
  missedHeartbeats: integer("missed_heartbeats").notNull().default(0),
  createdAt: createdAt(),
});

export const apiKeyRoles = ["public", "admin"] as const;
export type ApiKeyRole = (typeof apiKeyRoles)[number];

/** An API key: only its public prefix and the SHA-256 of the whole key are stored. */
export const apiKeys = sqliteTable("api_keys", {
  id: text("id").primaryKey(),
  prefix: text("prefix").notNull().unique(),
  hash: text("hash").notNull(),
  role: text("role", { enum: apiKeyRoles }).notNull(),
  label: text("label").notNull(),
  createdAt: createdAt(),
  revokedAt: integer("revoked_at", { mode: "timestamp_ms" }),
});

/** One answered query: how it was routed, where the answer came from and what it cost. */
export const queries = sqliteTable(
  "queries",
  {
    id: text("id").primaryKey(),
    keyId: text("key_id"),
    createdAt: createdAt(),
    fingerprint: text("fingerprint").notNull(),
    route: text("route", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    source: text("source").notNull(),
    cost: text("cost", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    confidence: real("confidence"),
    verified: integer("verified", { mode: "boolean" }).notNull(),
  },
  (t) => [index("queries_created_idx").on(t.createdAt)],
);

export const flywheelStatuses = ["queued", "running", "accepted", "rejected"] as const;
export type FlywheelStatus = (typeof flywheelStatuses)[number];

/** Problems the model was unsure of, waiting for a heavier solve; one open item per fingerprint. */
export const flywheelQueue = sqliteTable(
  "flywheel_queue",
  {
    id: text("id").primaryKey(),
    problem: text("problem").notNull(),
    fingerprint: text("fingerprint").notNull(),
    status: text("status", { enum: flywheelStatuses }).notNull().default("queued"),
    referenceAnswer: text("reference_answer"),
    attempts: integer("attempts").notNull().default(0),
    cost: text("cost", { mode: "json" }).$type<Record<string, unknown>>(),
    result: text("result", { mode: "json" }).$type<Record<string, unknown>>(),
    createdAt: createdAt(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" })
      .notNull()
      .$defaultFn(() => new Date()),
  },
  (t) => [
    uniqueIndex("flywheel_open_fingerprint_idx")
      .on(t.fingerprint)
      .where(sql`${t.status} in ('queued', 'running')`),
    index("flywheel_status_idx").on(t.status, t.id),
  ],
);
