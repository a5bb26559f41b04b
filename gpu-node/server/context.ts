/**
 * What the GPU node's route modules share: the Hono environment, the options and limits of the
 * app, and the parts createGpuApp wires together (admission, drain state, metrics, imports,
 * upload grants). Routes are thin: validate, call the block service, answer.
 */
import type { Context } from "hono";
import type { z } from "zod";
import { readJson } from "../../shared/http/json-body.js";
import type { Logger } from "../../shared/http/logger.js";
import type { Health } from "../../shared/protocol.js";
import { sha256Schema } from "../../shared/protocol.js";
import type { UploadGrantClaims } from "../../shared/upload-grant.js";
import type { Blocks } from "../blocks/types.js";
import { badRequest } from "../errors.js";
import type { ProgramJob, ProgramResult } from "../sandbox/sandbox.js";
import type { SolveInput, Solver } from "../solve/solver.js";
import type { AccessConfig } from "./access.js";
import type { RequestTracker } from "./drain.js";
import type { UploadGrants } from "./grants.js";
import type { ImportSessions } from "./imports.js";
import type { GpuMetrics } from "./metrics.js";
import type { AdmissionQueue } from "./queue.js";
import type { StorageState } from "./storage-state.js";
import type { ModelWork } from "./work.js";

/** Tunable limits of the HTTP layer; every field has a default. */
export interface ServerLimits {
  /** Model jobs running at once; default the block service's slot count. */
  concurrency: number;
  /** Model jobs allowed to wait; one more is a 429. Default twice the concurrency. */
  maxWaiting: number;
  /** Largest JSON request body. Import chunks have their own limit (LIMITS.importChunkBytes). */
  bodyBytes: number;
  /** Deadline of model work when the request names none. */
  defaultDeadlineMs: number;
  /** Longest deadline granted; a request asking for more gets this. */
  maxDeadlineMs: number;
  maxImports: number;
  maxImportBytes: number;
  importIdleTimeoutMs: number;
  /** Retry-After of a full queue or a draining node. */
  retryAfterS: number;
}

/** The sandbox as the server needs it (a SandboxPool fits). */
export interface SandboxRunner {
  readonly isolation: string;
  /** Runs one job; `signal` ends its wait for a slot (the request's deadline, client and shutdown). */
  runProgram(job: ProgramJob, signal?: AbortSignal): Promise<ProgramResult>;
}

/** The solve pipeline as the server needs it (a Solver fits). */
export interface SolveRunner {
  solve(
    req: SolveInput,
    signal?: AbortSignal,
    onToken?: (token: number, text: string) => void,
  ): ReturnType<Solver["solve"]>;
}

export interface GpuAppOptions {
  blocks: Blocks;
  /** Shared secret of the edge's request signatures. */
  secret: string;
  /** The secret `secret` replaces, still accepted while a rotation is under way (KVGRAFT_GPU_SECRET_PREVIOUS). */
  previousSecret?: string;
  /** Identity of the loaded model and engine, for health and import checks. */
  fingerprints: { model: Health["model"]; engine: Health["engine"] };
  /** Data directory of the node; import uploads go to `<dataDir>/imports`. */
  dataDir: string;
  limits?: Partial<ServerLimits>;
  sandbox?: SandboxRunner;
  /** Why there is no sandbox (for /health and the 503s); default "disabled". */
  sandboxUnavailable?: string;
  /** The solve pipeline; default one over the block service's engine and slots and the sandbox. */
  solver?: SolveRunner;
  /** When set, every signed route also needs a valid Cloudflare Access JWT. */
  access?: AccessConfig;
  /** GPU memory, when the backend reports it. */
  vram?: () => Promise<{ usedBytes: number; totalBytes: number } | null>;
  maxSkewS?: number;
  /** Where request lines and unexpected errors go; default JSON lines on stderr at level info. */
  logger?: Logger;
  /** Path of a stored block's state file after its hash check (serves `GET /v1/blocks/:id/file`). */
  blockFile?: (id: string) => Promise<string>;
}

/** Hono environment of the node's app: per-request variables. */
export type GpuEnv = {
  Variables: { requestId: string; clientSignal: AbortSignal; grant: UploadGrantClaims | undefined };
};

/** Everything a route module needs. */
export interface ServerContext {
  options: GpuAppOptions;
  blocks: Blocks;
  limits: ServerLimits;
  queue: AdmissionQueue;
  work: ModelWork;
  tracker: RequestTracker;
  metrics: GpuMetrics;
  imports: ImportSessions;
  grants: UploadGrants;
  solver: SolveRunner | undefined;
  /** Why there is no sandbox, when there is none. */
  noSandbox: string;
  started: number;
  /** The data directory's storage and the nonce log, for /health. */
  storage: StorageState;
}

/** The `:id` parameter as a block id (400 `invalid_block_id` otherwise). */
export function blockIdParam(c: Context): string {
  const id = sha256Schema.safeParse(c.req.param("id"));
  if (!id.success) throw badRequest("invalid_block_id", "block ids are lower-case hex SHA-256");
  return id.data;
}

/** A request body of the node: an empty body is `{}`, so that all-default requests need none. */
export function jsonBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  return readJson(c, schema, { emptyAsObject: true });
}
