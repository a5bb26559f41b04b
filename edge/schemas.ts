/**
 * The edge's public and admin API as zod schemas: routes validate with them and /openapi.json is
 * generated from them (z.toJSONSchema), so the document cannot drift from what is enforced.
 */
import { z } from "zod";
import { transferRefusalCodes } from "../shared/params.js";
import {
  blockManifestSchema,
  energySchema,
  errorBodySchema,
  LIMITS,
  sha256Schema,
} from "../shared/protocol.js";
import { apiKeyRoles, blockStates } from "./db/schema.js";
import { answerChecks } from "./routing/answer-checks.js";

const problemText = z.string().trim().min(1).max(LIMITS.queryChars);

// ---- public API ----------------------------------------------------------------------------

export const solveModes = ["auto", "library", "verified"] as const;

export const solveRequestSchema = z
  .object({
    problem: problemText.describe("The problem, in any formatting (LaTeX, Unicode, plain)."),
    maxTokens: z
      .number()
      .int()
      .min(1)
      .max(LIMITS.maxTokens)
      .optional()
      .describe("Most tokens the model may generate; capped by the edge's KVGRAFT_SOLVE_MAX_TOKENS."),
    mode: z
      .enum(solveModes)
      .default("auto")
      .describe(
        "auto: library, then transfer/graft, then the plain model. library: never the plain model " +
          "(source none when no library entry fits). verified: only a verified library answer, no GPU call.",
      ),
    stream: z
      .boolean()
      .default(false)
      .describe(
        "true: answer with server-sent events (text/event-stream): `token` events with the GPU node's " +
          "text as it is generated (grafts and model solves), then one `result` (the JSON answer) or `error`.",
      ),
  })
  .strict();
export type SolveRequest = z.output<typeof solveRequestSchema>;

export const solveSources = ["library", "transfer", "graft", "model", "none"] as const;
export const routeDecisions = ["answer", "template", "similar", "abstain"] as const;
export const routeReasons = [
  "fingerprint",
  "template_transfer",
  "template_graft",
  "similar",
  "no_block",
  "no_candidates",
  "below_threshold",
  "ambiguous",
  "structure_differs",
  "question_differs",
  "numbers_differ",
  "mode_library_only",
  "mode_verified_only",
] as const;

export const solveResponseSchema = z.object({
  answer: z
    .string()
    .nullable()
    .describe("The answer (last non-empty line of generated text); null for none."),
  text: z
    .string()
    .nullable()
    .describe(
      "The full generated text; null for library, transfer (a program's output never leaves) and none.",
    ),
  source: z.enum(solveSources),
  verified: z
    .boolean()
    .describe(
      "True only for the verified answer of this exact problem (library), or an answer a verified program " +
        "computed on numbers of the kind, sign and role it was verified with (transfer); `verification` says how.",
    ),
  verification: z
    .object({
      method: z
        .enum(["library_answer", "program_transfer"])
        .describe(
          "library_answer: the stored answer of the same problem; program_transfer: a verified program re-run.",
        ),
      solutionId: z.string(),
      params: z
        .enum(["same_problem", "kind_sign_and_role_match"])
        .describe("What was checked about the numbers against the verified ones."),
      answerCheck: z
        .enum(answerChecks)
        .nullable()
        .describe(
          "The independent check the answer passed (gcd, power remainder, root substituted); null if none applies.",
        ),
      note: z.string(),
    })
    .nullable()
    .describe("How a verified answer was verified; null when `verified` is false."),
  transferRefused: z
    .object({
      code: z.enum(transferRefusalCodes),
      param: z
        .number()
        .int()
        .nullable()
        .describe("Index of the number (order of appearance), when about one."),
      message: z.string(),
    })
    .nullable()
    .describe("Why a template match with a verified program was not answered by transfer; null otherwise."),
  confidence: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe("1 for verified library answers; null where the edge has no calibrated estimate."),
  route: z.object({
    decision: z
      .enum(routeDecisions)
      .describe(
        "The router's decision (edge/routing/router.ts): answer (same problem), template (same wording, new " +
          "numbers), similar (a reworded library problem: its block is grafted, never transfer), abstain.",
      ),
    blockId: sha256Schema.nullable(),
    problemId: z.string().nullable(),
    score: z
      .number()
      .nullable()
      .describe("1 for an exact fingerprint or template match; else the best candidate's score in [0, 1]."),
    runnerUp: z.number().optional().describe("The runner-up candidate's score, for lexical decisions."),
    reason: z.enum(routeReasons),
  }),
  cost: z.object({
    gpuTokensIn: z.number().int(),
    gpuTokensOut: z.number().int(),
    gpuMs: z.number(),
    edgeMs: z.number(),
    energy: energySchema
      .nullable()
      .describe(
        "The GPU node's energy for a model solve (nvidia-smi power sampled every 100 ms over the solve's GPU " +
          "work; other work on the GPU in that window is included); null when not measured: no GPU call, a " +
          "graft or transfer, or a node without nvidia-smi.",
      ),
  }),
  hashes: z.object({
    problemFingerprint: sha256Schema,
    answerSha256: sha256Schema.nullable(),
    outputSha256: sha256Schema.nullable().describe("SHA-256 of the GPU node's output tokens."),
    blockSha256: sha256Schema.nullable(),
  }),
  queued: z
    .boolean()
    .describe("Whether the problem was queued for the flywheel (an unverified answer, and the flywheel on)."),
  queryId: z.string(),
  requestId: z.string(),
});
export type SolveResponse = z.infer<typeof solveResponseSchema>;

const isoDate = z.string().describe("ISO 8601 time");

export const problemSchema = z.object({
  id: z.string(),
  normalizedText: z.string(),
  fingerprint: sha256Schema,
  template: z.string(),
  params: z
    .array(z.union([z.string(), z.number()]))
    .describe(
      "The problem's numbers in order: exact literals (strings); numbers in entries deposited before.",
    ),
  createdAt: isoDate,
});
export const solutionSchema = z.object({
  id: z.string(),
  problemId: z.string(),
  version: z
    .number()
    .int()
    .describe("1, 2, ... per problem; a newer verified version supersedes the one before."),
  worked: z.string(),
  program: z.string().nullable(),
  answer: z.string(),
  parametric: z
    .boolean()
    .describe(
      "True when the program reads at least one of the problem's numbers: it may then be re-run on new numbers " +
        "(transfer). False (it prints a constant): it answers this exact problem only.",
    ),
  verified: z.boolean(),
  verification: z.record(z.string(), z.unknown()),
  createdAt: isoDate,
  supersededAt: isoDate
    .nullable()
    .describe("When a newer version replaced it (kept for audit); null: current."),
  supersededBy: z.string().nullable().describe("The solution that replaced it."),
});
export const blockSchema = z.object({
  sha256: sha256Schema,
  problemId: z.string(),
  tokenCount: z.number().int(),
  tokensSha256: sha256Schema,
  textSha256: sha256Schema,
  modelFingerprint: z.string(),
  engineFingerprint: z.string(),
  manifest: z.record(z.string(), z.unknown()),
  state: z.enum(blockStates),
  nodeId: z.string().nullable(),
  createdAt: isoDate,
});
/** `GET /v1/library/:id`: the problem with every solution version and every block, manifests included. */
export const libraryItemSchema = z.object({
  problem: problemSchema,
  solutions: z.array(solutionSchema),
  blocks: z.array(blockSchema),
});
export const libraryQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    cursor: z.string().max(100).optional(),
    q: z.string().trim().min(1).max(500).optional(),
  })
  .strict();
/** One entry of `GET /v1/library`: what the list needs; the rest is on the detail route. */
export const librarySummarySchema = z.object({
  id: z.string().describe("Problem id: GET /v1/library/{id} has its solutions and blocks with manifests."),
  problem: z.string().describe("The normalized problem text."),
  template: z.string(),
  answer: z.string().nullable().describe("The current verified answer, else null."),
  solution: z
    .object({ id: z.string(), version: z.number().int(), parametric: z.boolean() })
    .nullable()
    .describe("The current solution (newest verified version), else null."),
  block: z
    .object({ sha256: sha256Schema, tokenCount: z.number().int(), state: z.enum(blockStates) })
    .nullable()
    .describe("The newest ready block, else null."),
  createdAt: isoDate,
});
export const libraryPageSchema = z.object({
  items: z.array(librarySummarySchema),
  nextCursor: z.string().nullable(),
});

// ---- admin API -----------------------------------------------------------------------------

export const adminSolutionRequestSchema = z
  .object({
    problem: problemText,
    solution: z.string().trim().min(1).max(100_000).describe("The worked solution, in prose."),
    program: z
      .string()
      .min(1)
      .max(LIMITS.programChars)
      .describe(
        "Python that prints the answer as its last line; `PARAMS` holds the problem's numbers. A program that " +
          "reads none of them (prints a constant) is accepted for this problem only (`parametric: false`).",
      ),
    answer: z.string().trim().min(1).max(1000),
  })
  .strict();
export type AdminSolutionRequest = z.output<typeof adminSolutionRequestSchema>;

export const adminSolutionResponseSchema = z.object({
  created: z
    .boolean()
    .describe(
      "True when a solution was stored: a new problem, or a new version of a known one (see `superseded`). " +
        "False: the same solution was already the problem's current one (its block is deposited again if it had none).",
    ),
  problem: problemSchema,
  solution: solutionSchema,
  block: blockSchema.nullable(),
  superseded: solutionSchema
    .nullable()
    .describe("The previous version this solution replaced, now kept for audit only; null otherwise."),
});

export const adminBlockRegisterSchema = z
  .object({
    problemId: z.string().min(1).max(100),
    sha256: sha256Schema.describe("The imported block; the edge reads its manifest from the GPU node."),
  })
  .strict();

export const keyCreateSchema = z
  .object({ role: z.enum(apiKeyRoles), label: z.string().trim().min(1).max(200) })
  .strict();
export const keyCreatedSchema = z.object({
  id: z.string(),
  key: z.string().describe("The plaintext key: shown once, never stored."),
  prefix: z.string(),
  role: z.enum(apiKeyRoles),
  label: z.string(),
});
export const keyInfoSchema = z.object({
  id: z.string(),
  prefix: z.string(),
  role: z.enum(apiKeyRoles),
  label: z.string(),
  createdAt: isoDate,
  revokedAt: isoDate.nullable(),
});

const fingerprintValue = z.union([z.string().min(1), z.record(z.string(), z.unknown())]);
export const nodeRegisterSchema = z
  .object({
    id: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/)
      .describe("Stable node id."),
    url: z.url(),
    modelFingerprint: fingerprintValue,
    engineFingerprint: fingerprintValue,
    capacity: z.record(z.string(), z.unknown()).default({}),
    health: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();
export const nodeSchema = z.object({
  id: z.string(),
  url: z.string(),
  modelFingerprint: z.string(),
  engineFingerprint: z.string(),
  capacity: z.record(z.string(), z.unknown()),
  health: z.record(z.string(), z.unknown()),
  status: z.enum(["up", "down"]),
  lastHeartbeatAt: isoDate,
  missedHeartbeats: z.number().int(),
  createdAt: isoDate,
});

export const uploadRequestSchema = z
  .object({
    problemId: z.string().min(1).max(100).describe("The registered problem the block belongs to."),
    sha256: sha256Schema.describe("SHA-256 of the block state file to upload."),
    sizeBytes: z
      .number()
      .int()
      .positive()
      .max(2 ** 42),
  })
  .strict();
export const uploadGrantSchema = z.object({
  grant: z.string().describe("Token for the GPU node; send it as `Authorization: KvgraftUpload <grant>`."),
  expiresAt: z.string(),
  nodeUrl: z.string(),
  chunkBytes: z.number().int(),
  endpoints: z.object({
    start: z.string(),
    chunk: z.string(),
    commit: z.string(),
    register: z.string(),
  }),
  bucket: z
    .object({
      uploadId: z.string(),
      stateUrl: z.string().describe("Presigned PUT URL for the state file; good until expiresAt."),
      manifestUrl: z.string().describe("Presigned PUT URL for the manifest (JSON), sent after the state."),
    })
    .optional()
    .describe("Present when the edge has the block bucket: upload there, then ask a GPU node to verify it."),
  steps: z.array(z.string()),
});

export const healthResponseSchema = z.object({
  status: z.enum(["ok", "degraded", "down"]),
  edge: z.object({ status: z.enum(["ok", "down"]), runtime: z.string(), uptimeS: z.number() }),
  db: z.object({ status: z.enum(["ok", "down"]), ms: z.number(), error: z.string().optional() }),
  gpu: z.object({
    /** `degraded`: the node serves with a slot retired. */
    status: z.enum(["ok", "degraded", "down", "not_configured", "draining"]),
    ms: z.number().nullable(),
    error: z.string().optional(),
    model: z.string().optional(),
    slots: z.object({ total: z.number(), busy: z.number(), retired: z.number().optional() }).optional(),
    /** The node's sandbox: `wasm`, `bwrap`, or `none` with the reason (programs are not run there). */
    sandbox: z.object({ isolation: z.string(), reason: z.string().optional() }).optional(),
  }),
});

export { blockManifestSchema, errorBodySchema };
