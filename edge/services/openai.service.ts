/**
 * The OpenAI-compatible API over the solve pipeline: a chat completion solves the last user
 * message (the model id picks the solve mode), answers in OpenAI's shapes, and carries kvgraft's
 * own fields in the `kvgraft` extension object; errors are OpenAI's error body.
 */
import { badRequest, DomainError } from "../../shared/errors.js";
import type { ValidationIssue } from "../../shared/http/zod-issues.js";
import { type SseFormat, sseData } from "../../shared/sse.js";
import type { Deps } from "../http.js";
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  type KvgraftExtension,
  type OpenAIModelId,
  openAIModels,
} from "../openai-schemas.js";
import type { SolveRequest, SolveResponse } from "../schemas.js";
import { type SolveContext, solve } from "./solve.service.js";
import type { SolveEvent } from "./solve-stream.service.js";

/** When the models were first offered (their `created`, seconds since the epoch). */
const MODELS_CREATED = 1_764_460_800;

/** The model list of `GET /v1/models`. */
export function listModels() {
  return {
    object: "list" as const,
    data: Object.keys(openAIModels).map((id) => modelInfo(id as OpenAIModelId)),
  };
}

/** One model (`GET /v1/models/{id}`); 404 `model_not_found` for another id. */
export function modelInfo(id: string) {
  if (!(id in openAIModels))
    throw new DomainError(
      404,
      "model_not_found",
      `The model '${id}' does not exist; GET /v1/models lists them.`,
    );
  return { id, object: "model" as const, created: MODELS_CREATED, owned_by: "kvgraft" };
}

/** The solve request a chat completion asks for: the last user message, the model's mode, the token budget. */
export function solveRequestOf(req: ChatCompletionRequest): SolveRequest {
  modelInfo(req.model);
  const user = req.messages.findLast((m) => m.role === "user");
  const content = user?.content;
  const text =
    typeof content === "string"
      ? content
      : (content ?? [])
          .map((part) => (part.type === "text" && "text" in part ? String(part.text) : ""))
          .join("");
  if (text.trim() === "")
    throw badRequest("no_user_message", "messages needs a user message with text: it is the problem solved.");
  const maxTokens = req.max_completion_tokens ?? req.max_tokens;
  return {
    problem: text,
    mode: openAIModels[req.model as OpenAIModelId],
    stream: req.stream === true,
    ...(maxTokens ? { maxTokens } : {}),
  };
}

/** A chat completion, answered whole. */
export async function chatCompletion(
  deps: Deps,
  req: ChatCompletionRequest,
  ctx: SolveContext,
): Promise<ChatCompletion> {
  const response = await solve(deps, solveRequestOf(req), ctx);
  return {
    ...envelope(req, ctx, deps.clock.now(), "chat.completion"),
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: contentOf(response), refusal: null },
        finish_reason: "stop",
        logprobs: null,
      },
    ],
    usage: usageOf(response),
    kvgraft: extensionOf(response),
  };
}

/**
 * The chunks of a streamed chat completion: the role first, then the solve's tokens as content
 * (or, where nothing was generated, the answer in one chunk), then `finish_reason` with `kvgraft`,
 * usage when asked for, and `[DONE]`.
 */
export function chatChunkFormat(
  req: ChatCompletionRequest,
  ctx: SolveContext,
  now: number,
): SseFormat<SolveEvent> & { start: string } {
  const base = envelope(req, ctx, now, "chat.completion.chunk");
  const chunk = (c: Omit<ChatCompletionChunk, keyof typeof base>) =>
    sseData(JSON.stringify({ ...base, ...c }));
  const choice = (delta: { role?: "assistant"; content?: string }, finish: "stop" | null = null) => ({
    index: 0,
    delta,
    finish_reason: finish,
    logprobs: null,
  });
  let streamedText = false;
  return {
    start: chunk({ choices: [choice({ role: "assistant", content: "" })] }),
    event(e) {
      if (e.type === "token") {
        streamedText = true;
        return chunk({ choices: [choice({ content: e.text })] });
      }
      const r = e.response;
      const answer = streamedText ? "" : chunk({ choices: [choice({ content: contentOf(r) })] });
      const last = chunk({ choices: [choice({}, "stop")], kvgraft: extensionOf(r) });
      const usage = req.stream_options?.include_usage ? chunk({ choices: [], usage: usageOf(r) }) : "";
      return answer + last + usage;
    },
    error: (status, body) => sseData(JSON.stringify({ ...openAIError(status, body), status })),
    end: sseData("[DONE]"),
  };
}

/** OpenAI's error type for a status. */
export function openAIErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

/**
 * The edge's error body (`{error: {code, message, details?}}`) in OpenAI's shape. A validation
 * error names its first failing field in `param` (OpenAI's dotted path, `messages.0.role`) and
 * every failing field in the message, as the native API does in `details.issues`.
 */
export function openAIError(status: number, body: unknown) {
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error;
  const issues = issuesOf(error?.details);
  const message = typeof error?.message === "string" ? error.message : "Request failed.";
  return {
    error: {
      message:
        issues.length > 0
          ? `${message.replace(/\.$/, "")}: ${issues.map(describeIssue).join("; ")}.`
          : message,
      type: openAIErrorType(status),
      code: typeof error?.code === "string" ? error.code : "internal_error",
      param: issues[0]?.path || null,
    },
  };
}

/** The `{path, message}` issues of an error's details (shared/http/zod-issues.ts), else none. */
function issuesOf(details: unknown): ValidationIssue[] {
  const issues = (details as { issues?: unknown } | undefined)?.issues;
  if (!Array.isArray(issues)) return [];
  return issues.filter(
    (i): i is ValidationIssue => typeof i?.path === "string" && typeof i?.message === "string",
  );
}

function describeIssue(issue: ValidationIssue): string {
  return `${issue.path || "body"}: ${issue.message}`;
}

function envelope<O extends string>(req: ChatCompletionRequest, ctx: SolveContext, now: number, object: O) {
  return { id: `chatcmpl-${ctx.requestId}`, object, created: Math.floor(now / 1000), model: req.model };
}

/** The message text: what the GPU node generated, else the answer, else nothing (source none). */
function contentOf(r: SolveResponse): string {
  return r.text ?? r.answer ?? "";
}

function usageOf(r: SolveResponse) {
  return {
    prompt_tokens: r.cost.gpuTokensIn,
    completion_tokens: r.cost.gpuTokensOut,
    total_tokens: r.cost.gpuTokensIn + r.cost.gpuTokensOut,
  };
}

function extensionOf(r: SolveResponse): KvgraftExtension {
  return {
    answer: r.answer,
    source: r.source,
    verified: r.verified,
    verification: r.verification,
    transferRefused: r.transferRefused,
    confidence: r.confidence,
    route: r.route,
    cost: r.cost,
    hashes: r.hashes,
    queued: r.queued,
    queryId: r.queryId,
    requestId: r.requestId,
  };
}
