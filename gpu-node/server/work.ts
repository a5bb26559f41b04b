/**
 * Model work over HTTP: admission through the bounded queue, a deadline per request
 * (`x-kvgraft-deadline-ms`, capped by the node), cancellation when the client goes away or the node
 * shuts down, and grafts and generations answered as JSON or as server-sent events. Every abort
 * maps to the error its cause deserves.
 */
import type { Context } from "hono";
import { DomainError } from "../../shared/errors.js";
import type { ErrorMappingOptions } from "../../shared/http/errors.js";
import { DEADLINE_HEADER, type GenerationResult, type StreamEvent } from "../../shared/protocol.js";
import type { SolveResult } from "../../shared/solve-protocol.js";
import {
  EVENT_STREAM_HEADERS,
  eventStream,
  pushedEvents,
  type SseFormat,
  sseEvent,
} from "../../shared/sse.js";
import type { GenerationOptions } from "../blocks/types.js";
import { badRequest, nodeError, tooManyRequests, unavailable } from "../errors.js";
import type { GpuEnv, ServerLimits } from "./context.js";
import type { RequestTracker } from "./drain.js";
import { BackgroundDeferred, type ForegroundGate } from "./foreground.js";
import type { GpuMetrics } from "./metrics.js";
import type { AdmissionQueue } from "./queue.js";

/** An admitted piece of work: its combined signal and the parts that tell why it ended. */
export interface Work {
  signal: AbortSignal;
  deadline: AbortSignal;
  client: AbortSignal;
  release: () => void;
}

type Signals = Pick<Work, "deadline" | "client">;

export interface ModelWorkParts {
  queue: AdmissionQueue;
  /** Background work yields to the rest (foreground.ts). */
  foreground: ForegroundGate;
  limits: ServerLimits;
  tracker: RequestTracker;
  metrics: GpuMetrics;
  errorMapping: ErrorMappingOptions;
}

/** The node's streams: each batch of events as pushed, an error as the `error` event with its status. */
const nodeStreamFormat: SseFormat<StreamEvent[]> = {
  event: (batch) => batch.map((e) => sseEvent(e.event, e.data)).join(""),
  error: (status, body) => sseEvent("error", { ...(body as object), status }),
};

export class ModelWork {
  /** Aborted when the node stops: running work ends with `shutting_down`. */
  private readonly shutdown = new AbortController();

  constructor(private readonly parts: ModelWorkParts) {}

  /** Stops running generations (they end with finishReason "aborted"). */
  abortAll(): void {
    this.shutdown.abort(new Error("the node is shutting down"));
  }

  /** The request's deadline in ms: its header (capped), else the default; 400 when malformed. */
  deadlineMs(c: Context): number {
    const { limits } = this.parts;
    const raw = c.req.header(DEADLINE_HEADER);
    if (raw === undefined) return limits.defaultDeadlineMs;
    const ms = Number(raw);
    if (!/^\d{1,12}$/.test(raw) || ms < 1)
      throw badRequest("invalid_deadline", `${DEADLINE_HEADER} must be a positive integer (milliseconds)`);
    // A longer budget than the node grants is not an error: the node's limit applies.
    return Math.min(ms, limits.maxDeadlineMs);
  }

  /** The signals of work that waits in its own queue (the sandbox's): deadline, client, shutdown. */
  signals(c: Context<GpuEnv>): Signals & { signal: AbortSignal; deadlineMs: number } {
    const deadlineMs = this.deadlineMs(c);
    const deadline = AbortSignal.timeout(deadlineMs);
    const client = c.var.clientSignal;
    return {
      deadline,
      deadlineMs,
      client,
      signal: AbortSignal.any([deadline, client, this.shutdown.signal]),
    };
  }

  /** Maps an abort to the error its cause deserves; other errors pass through. */
  abortError(err: unknown, work: Signals): unknown {
    if (err instanceof DomainError) return err;
    if (work.deadline.aborted)
      return nodeError(504, "deadline_exceeded", "the request's deadline passed before any output");
    if (this.shutdown.signal.aborted)
      return unavailable("shutting_down", "the node is shutting down", this.parts.limits.retryAfterS);
    // Nobody reads this answer; it only keeps a departed client out of the 5xx counts and logs.
    if (work.client.aborted) return badRequest("client_closed", "the client closed the connection");
    return err;
  }

  /**
   * Waits for a slot in the model queue (429 when full, 503 while draining); foreground work
   * from the call until the release, so background work yields to it.
   */
  async admit(c: Context<GpuEnv>): Promise<Work> {
    this.parts.tracker.assertAccepting();
    const { deadline, deadlineMs, client, signal } = this.signals(c);
    const leave = this.parts.foreground.enter();
    try {
      // Work that could not finish within its deadline is refused now, not cut after it has begun.
      const release = await this.parts.queue.acquire(signal, deadlineMs);
      return {
        signal,
        deadline,
        client,
        release: () => {
          release();
          leave();
        },
      };
    } catch (err) {
      leave();
      throw this.abortError(err, { deadline, client });
    }
  }

  /** Runs model work that takes no signal of its own: the deadline bounds only its wait. */
  async queued<T>(c: Context<GpuEnv>, run: () => Promise<T>): Promise<T> {
    const work = await this.admit(c);
    try {
      return await run();
    } finally {
      work.release();
    }
  }

  /**
   * Runs admitted work that takes the work's signal; aborts map to their cause. `background`:
   * the job yields to all other model work (foreground.ts): it starts once none is active, and
   * is stopped and run again when some arrives; the deadline bounds the whole of it.
   */
  async run<T>(
    c: Context<GpuEnv>,
    job: (signal: AbortSignal) => Promise<T>,
    options: { background?: boolean } = {},
  ): Promise<T> {
    if (options.background) return this.background(c, job);
    const work = await this.admit(c);
    try {
      return await job(work.signal);
    } catch (err) {
      throw this.abortError(err, work);
    } finally {
      work.release();
    }
  }

  private async background<T>(c: Context<GpuEnv>, job: (signal: AbortSignal) => Promise<T>): Promise<T> {
    this.parts.tracker.assertAccepting();
    const { deadline, deadlineMs, client, signal } = this.signals(c);
    const patience = AbortSignal.timeout(Math.max(1, Math.floor(deadlineMs / 2)));
    try {
      return await this.parts.foreground.yielding(signal, patience, async (yieldingSignal) => {
        const release = await this.parts.queue.acquire(yieldingSignal);
        try {
          return await job(yieldingSignal);
        } finally {
          release();
        }
      });
    } catch (err) {
      if (err instanceof BackgroundDeferred)
        throw tooManyRequests(
          "background_deferred",
          "other model work kept this node busy for half the background solve's deadline; retry later",
          this.parts.limits.retryAfterS,
        );
      throw this.abortError(err, { deadline, client });
    }
  }

  /** A graft or generation, as JSON or as server-sent events. */
  async generation(
    c: Context<GpuEnv>,
    kind: "graft" | "generate",
    stream: boolean,
    run: (options: Pick<GenerationOptions, "signal" | "onToken">) => Promise<GenerationResult>,
  ): Promise<Response> {
    const work = await this.admit(c);
    /** The result, unless it was cut off before producing anything. */
    const finish = (result: GenerationResult): GenerationResult => {
      this.parts.metrics.recordGeneration(kind, result);
      if (result.finishReason === "aborted" && result.tokensOut === 0) {
        const err = this.abortError(new Error("aborted"), work);
        if (err instanceof DomainError) throw err;
      }
      return result;
    };
    if (!stream) {
      try {
        return c.json(finish(await run({ signal: work.signal })));
      } catch (err) {
        throw this.abortError(err, work);
      } finally {
        work.release();
      }
    }
    return this.streamed(c, work, run, (result) => ({ event: "summary", data: finish(result) }));
  }

  /** A sampled solve as server-sent events: every sample's tokens, then `solved` (or `error`). */
  async solveStream(
    c: Context<GpuEnv>,
    run: (signal: AbortSignal, onToken: (token: number, text: string) => void) => Promise<SolveResult>,
  ): Promise<Response> {
    const work = await this.admit(c);
    return this.streamed(
      c,
      work,
      (o) => run(o.signal, o.onToken),
      (result) => {
        this.parts.metrics.recordTokens("solve", result);
        return { event: "solved", data: result };
      },
    );
  }

  /**
   * The SSE half of `generation` and `solveStream`: tokens as events, then the final event that
   * `finish` makes of the result (or an error event). A client that goes away aborts the work.
   */
  private async streamed<T>(
    c: Context<GpuEnv>,
    work: Work,
    run: (options: { signal: AbortSignal; onToken: (token: number, text: string) => void }) => Promise<T>,
    finish: (result: T) => StreamEvent,
  ): Promise<Response> {
    const cancel = new AbortController();
    const signal = AbortSignal.any([work.signal, cancel.signal]);
    const stop = () => cancel.abort(new Error("client closed the stream"));
    // The work runs to its end whether or not the client reads: the slot is released then.
    const batches = pushedEvents<StreamEvent>(async (push) => {
      try {
        const result = await run({
          signal,
          onToken: (token, text) => push({ event: "token", data: { token, text } }),
        });
        push(finish(result));
      } catch (err) {
        throw this.abortError(err, work);
      } finally {
        work.release();
      }
    }, stop);
    // Nothing sent before a failure: the failure answers with a plain error status, not a stream.
    const body = await eventStream(batches, nodeStreamFormat, {
      requestId: c.var.requestId,
      errors: this.parts.errorMapping,
      onCancel: stop,
    });
    return new Response(body, { headers: EVENT_STREAM_HEADERS });
  }
}
