/**
 * The OpenAI-compatible API (`/v1/chat/completions`, `/v1/models`) as zod schemas: the request
 * fields the solve pipeline uses (others that OpenAI's clients send are accepted and ignored), and
 * the response shapes of OpenAI's Chat Completions API with kvgraft's own fields in an extension
 * object, `kvgraft`, that standard clients ignore.
 */
import { z } from "zod";
import { LIMITS } from "../shared/protocol.js";
import { solveResponseSchema } from "./schemas.js";

/** The models: one per solve mode (edge/schemas.ts `solveModes`). */
export const openAIModels = {
  kvgraft: "auto",
  "kvgraft-library": "library",
  "kvgraft-verified": "verified",
} as const;
export type OpenAIModelId = keyof typeof openAIModels;

const textPart = z.object({ type: z.literal("text"), text: z.string() }).loose();
const messageSchema = z
  .object({
    role: z.string().describe("system, developer, user, assistant or tool; only user messages are read."),
    content: z
      .union([z.string(), z.array(z.union([textPart, z.object({ type: z.string() }).loose()])), z.null()])
      .optional(),
  })
  .loose();

export const chatCompletionRequestSchema = z
  .object({
    model: z
      .string()
      .min(1)
      .describe(`One of ${Object.keys(openAIModels).join(", ")} (GET /v1/models).`),
    messages: z
      .array(messageSchema)
      .min(1)
      .describe("The conversation; the last user message's text is the problem solved."),
    stream: z.boolean().nullable().optional().describe("true: chat.completion.chunk events, then [DONE]."),
    stream_options: z.object({ include_usage: z.boolean().optional() }).loose().nullable().optional(),
    max_completion_tokens: z.number().int().min(1).max(LIMITS.maxTokens).nullable().optional(),
    max_tokens: z
      .number()
      .int()
      .min(1)
      .max(LIMITS.maxTokens)
      .nullable()
      .optional()
      .describe("Deprecated alias of max_completion_tokens; both are capped by KVGRAFT_SOLVE_MAX_TOKENS."),
  })
  .loose()
  .describe(
    "OpenAI's chat completion request. Sampling fields (temperature, top_p, n, ...) are accepted and " +
      "ignored: the pipeline decodes greedily on grafts and samples its own votes on the model path.",
  );
export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;

/** kvgraft's own fields of an answer, in the `kvgraft` extension object. */
export const kvgraftExtensionSchema = solveResponseSchema
  .pick({
    answer: true,
    source: true,
    verified: true,
    verification: true,
    transferRefused: true,
    confidence: true,
    route: true,
    cost: true,
    hashes: true,
    queued: true,
    queryId: true,
    requestId: true,
  })
  .describe("kvgraft's fields, as in the POST /v1/solve answer; standard OpenAI clients ignore them.");
export type KvgraftExtension = z.infer<typeof kvgraftExtensionSchema>;

const usageSchema = z.object({
  prompt_tokens: z.number().int().describe("Tokens the GPU node evaluated (0 on the library fast path)."),
  completion_tokens: z.number().int().describe("Tokens the GPU node generated."),
  total_tokens: z.number().int(),
});

export const chatCompletionSchema = z.object({
  id: z.string(),
  object: z.literal("chat.completion"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      message: z.object({
        role: z.literal("assistant"),
        content: z.string(),
        refusal: z.null(),
      }),
      finish_reason: z.literal("stop"),
      logprobs: z.null(),
    }),
  ),
  usage: usageSchema,
  kvgraft: kvgraftExtensionSchema,
});
export type ChatCompletion = z.infer<typeof chatCompletionSchema>;

export const chatCompletionChunkSchema = z
  .object({
    id: z.string(),
    object: z.literal("chat.completion.chunk"),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        delta: z.object({ role: z.literal("assistant").optional(), content: z.string().optional() }),
        finish_reason: z.literal("stop").nullable(),
        logprobs: z.null(),
      }),
    ),
    usage: usageSchema.nullable().optional(),
    kvgraft: kvgraftExtensionSchema.optional().describe("On the last chunk with a choice only."),
  })
  .describe(
    "Each server-sent event is `data: <chunk>`; the stream ends with `data: [DONE]`. The first chunk " +
      "carries the role, the following ones the GPU node's text as it is generated (grafts and model " +
      "solves; on the library fast path and transfers one chunk with the answer), the last one " +
      "`finish_reason` and `kvgraft`; with stream_options.include_usage a chunk without choices " +
      "carries `usage`. A failure after the stream began is `data: {error}`.",
  );
export type ChatCompletionChunk = z.infer<typeof chatCompletionChunkSchema>;

export const modelSchema = z.object({
  id: z.string(),
  object: z.literal("model"),
  created: z.number().int(),
  owned_by: z.string(),
});
export const modelListSchema = z.object({ object: z.literal("list"), data: z.array(modelSchema) });

export const openAIErrorSchema = z.object({
  error: z.object({
    message: z.string(),
    type: z.string().describe("OpenAI's error type: invalid_request_error, authentication_error, ..."),
    code: z.string().describe("kvgraft's stable error code."),
    param: z.string().nullable(),
  }),
});
