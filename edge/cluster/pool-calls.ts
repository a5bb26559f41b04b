/**
 * The pool's request path (edge/cluster/gpu-pool.ts hands every call here): where a call goes,
 * and what happens when it fails. A graft goes to a live replica of its block where it is hot,
 * else warm, else any live replica (placement.ts); a deposit to a live node of the largest
 * fingerprint group; plain generation, sandbox runs and health to the least busy live node. A
 * call runs on the first candidate, and on the second if the first fails in a way another node
 * could fix (at most two attempts, within the call's timeout from the start); each failure is
 * classified by what it says about the node and the request, and counted per node.
 */
import { DomainError } from "../../shared/errors.js";
import type { GpuNodeClient, StreamOptions } from "../../shared/gpu-client.js";
import { sha256Hex } from "../../shared/hash.js";
import type { BlockManifest, GenerationResult, GraftRequest } from "../../shared/protocol.js";
import { rendezvousRank } from "../../shared/rendezvous.js";
import type { PoolSettings } from "../config.js";
import type { Database } from "../db/database.js";
import { blockFingerprints, recordedHolders, removeReplica } from "../db/replicas.js";
import { gpuFailure } from "./gpu-failure.js";
import type { NodeDirectory, PoolNode } from "./node-directory.js";
import type { MetricsBook, NodeMetrics } from "./node-metrics.js";
import { majorityGroup, preferIdle, type RouteTier, routeCandidates } from "./placement.js";

/**
 * How a caller holds model work: aborting `signal` aborts the call to the node (whose stream then
 * ends and frees the slot); with `onToken` the node streams and each token's text arrives as it
 * is generated.
 */
export interface ModelCallOptions {
  signal?: AbortSignal;
  onToken?: (text: string) => void;
}

/** The signed client's options for one model call: the deadline, the caller's signal, the token sink. */
export function modelCall(
  base: { deadlineMs: number; signal?: AbortSignal },
  opts: ModelCallOptions = {},
): StreamOptions {
  const signals = [base.signal, opts.signal].filter((s): s is AbortSignal => s !== undefined);
  const { onToken } = opts;
  return {
    deadlineMs: base.deadlineMs,
    ...(signals.length ? { signal: signals.length === 1 ? signals[0] : AbortSignal.any(signals) } : {}),
    ...(onToken ? { onToken: (_token: number, text: string) => onToken(text) } : {}),
  };
}

/** What the pool's calls share. */
export interface CallContext {
  db: Database;
  settings: PoolSettings;
  directory: NodeDirectory;
  metrics: MetricsBook;
  failover: FailoverCall;
  /** Rotates the least-busy order among equals. */
  nextOffset(): number;
  requestRebalance(reason: string, delayMs?: number): void;
}

/** 503 `no_replica`: no live node can take the call; retry after the time a node needs to be marked down. */
export function noReplica(timing: { heartbeatMs: number; downAfter: number }, blockId?: string): DomainError {
  return new DomainError(
    503,
    "no_replica",
    blockId ? "No GPU node that holds this block is reachable now." : "No GPU node is reachable now.",
    blockId ? { blockId } : undefined,
    Math.max(1, Math.ceil((timing.heartbeatMs * timing.downAfter) / 1000)),
  );
}

/** A failure's one-line description for logs and attempt lists. */
export const failureText = (err: unknown): string =>
  err instanceof Error ? `${err.name}: ${err.message}` : String(err);

/** Where a routed call went. */
export interface Routed<T> {
  result: T;
  nodeId: string;
  /** The tier the route chose (grafts only). */
  tier: RouteTier | null;
  /** Nodes tried, in order (two when the first failed). */
  attempts: { nodeId: string; error?: string; ms: number }[];
}

/** The deadline an attempt must keep: the time left of the call's budget. */
export type AttemptOptions = { deadlineMs: number; signal: AbortSignal };
export type Attempt<T> = (client: GpuNodeClient, opts: AttemptOptions, nodeId: string) => Promise<T>;

export interface FailoverDeps {
  timeoutMs: number;
  /** The heartbeat timing (how long until a node counts as down: the Retry-After of `no_replica`). */
  timing: { heartbeatMs: number; downAfter: number };
  client(nodeId: string): GpuNodeClient;
  metrics: MetricsBook;
  /** The node is unreachable: mark it down. */
  nodeGone(nodeId: string, err: unknown): Promise<void>;
  /** The node is slow, draining or broken: skip it until its next heartbeat. */
  markSuspect(nodeId: string): void;
}

/** Runs one call with failover; `external` is the caller's own abort signal, if any. */
export type FailoverCall = <T>(
  candidates: string[],
  fn: Attempt<T>,
  onLostBlock?: (nodeId: string) => Promise<void>,
  external?: AbortSignal,
) => Promise<Routed<T>>;

const MIN_RETRY_BUDGET_MS = 50;

/**
 * An attempt that failed after its stream had sent tokens to the caller: what the node did is
 * recorded as usual, but the call is not retried elsewhere (the caller would get the text twice).
 */
export class StreamStartedError extends Error {
  constructor(readonly failure: unknown) {
    super("the stream failed after it began");
  }
}

/** The failover runner of a pool. */
export function createFailover(deps: FailoverDeps): FailoverCall {
  const { timeoutMs } = deps;
  return async (candidates, fn, onLostBlock, external) => {
    const started = performance.now();
    const attempts: Routed<never>["attempts"] = [];
    let lastError: unknown;
    let failedHere: NodeMetrics | null = null;
    for (const nodeId of candidates.slice(0, 2)) {
      const left = timeoutMs - (performance.now() - started);
      if (attempts.length > 0 && left < MIN_RETRY_BUDGET_MS) break;
      // Counted as the retry starts: a call that failed on the only candidate was not failed over.
      if (failedHere) failedHere.failovers++;
      const t0 = performance.now();
      const m = deps.metrics.of(nodeId);
      m.requests++;
      m.inFlight++;
      try {
        const opts = {
          deadlineMs: Math.max(1, Math.floor(left)),
          signal: AbortSignal.timeout(Math.max(1, Math.ceil(left))),
        };
        const result = await fn(deps.client(nodeId), opts, nodeId);
        const ms = performance.now() - t0;
        m.latencyMsSum += ms;
        attempts.push({ nodeId, ms });
        return { result, nodeId, tier: null, attempts };
      } catch (err) {
        const ms = performance.now() - t0;
        m.latencyMsSum += ms;
        const thrown = gpuFailure(err, timeoutMs);
        if (thrown.shed) m.shed++;
        // The caller gave up: not the node's fault, and nobody waits for a retry.
        if (external?.aborted) throw thrown.error;
        m.failures++;
        const started = err instanceof StreamStartedError;
        const failure = started ? err.failure : err;
        const { kind, error } = started ? gpuFailure(failure, timeoutMs) : thrown;
        attempts.push({ nodeId, ms, error: failureText(failure) });
        lastError = failure;
        if (kind === "verdict") throw error;
        if (kind === "lost_block") await onLostBlock?.(nodeId);
        else if (kind === "gone") await deps.nodeGone(nodeId, failure);
        else if (kind === "suspect") deps.markSuspect(nodeId);
        if (started) throw error;
        failedHere = m;
      } finally {
        m.inFlight--;
      }
    }
    if (lastError === undefined) throw noReplica(deps.timing);
    const mapped = gpuFailure(lastError, timeoutMs).error;
    throw new DomainError(
      mapped.status,
      mapped.code,
      mapped.message,
      { ...mapped.details, attempts },
      mapped.retryAfterS,
    );
  };
}

/** Live nodes, least busy first; `offset` rotates the order among equals (round-robin). */
export function leastBusy(nodes: readonly PoolNode[], offset: number): string[] {
  const live = nodes.filter((n) => n.live);
  return live
    .map((n, i) => ({ n, k: (i + offset) % Math.max(1, live.length) }))
    .sort((a, b) => a.n.queueDepth - b.n.queueDepth || a.k - b.k)
    .map(({ n }) => n.id);
}

/** The nodes a graft of `blockId` may go to, best first, with the tier each holds it in. */
export async function graftCandidates(
  db: Database,
  blockId: string,
  all: readonly PoolNode[],
): Promise<{ id: string; tier: RouteTier }[]> {
  const info = await blockFingerprints(db, blockId);
  if (!info) {
    // Not in the library: any live node may have it (a pool of one, direct API use).
    return rendezvousRank(
      blockId,
      all.filter((n) => n.live).map((n) => n.id),
    ).map((id) => ({ id, tier: "cold" as const }));
  }
  const holders = (await recordedHolders(db, [blockId])).get(blockId) ?? new Set<string>();
  const candidates = routeCandidates(blockId, holders, all);
  // A pool of one: the configured node is the only place the block can be.
  const only = all.length === 1 && all[0]?.source === "static" ? all[0] : null;
  if (candidates.length === 0 && only?.live) return [{ id: only.id, tier: "cold" }];
  return candidates;
}

/** The nodes a deposit of `text` may go to: live nodes of the largest fingerprint group, by rendezvous rank. */
export async function depositCandidates(text: string, all: readonly PoolNode[]): Promise<string[]> {
  const live = all.filter((n) => n.live);
  const group = majorityGroup(live);
  const eligible = group
    ? live.filter(
        (n) =>
          n.modelFingerprint === group.modelFingerprint && n.engineFingerprint === group.engineFingerprint,
      )
    : live;
  return rendezvousRank(
    await sha256Hex(text),
    eligible.map((n) => n.id),
  );
}

/** Runs the call on the least busy live node, failing over once. */
export async function onLeastBusy<T>(ctx: CallContext, fn: Attempt<T>, external?: AbortSignal): Promise<T> {
  const order = leastBusy(await ctx.directory.nodes(), ctx.nextOffset());
  if (order.length === 0) throw noReplica(ctx.settings);
  return (await ctx.failover(order, fn, undefined, external)).result;
}

/**
 * One attempt of a model call with the caller's options; a streamed attempt that already sent
 * tokens fails as StreamStartedError, so it is not retried on another node.
 */
export function streamedOnce<T>(
  opts: ModelCallOptions | undefined,
  run: (client: GpuNodeClient, call: StreamOptions) => Promise<T>,
): Attempt<T> {
  return async (client, attempt) => {
    let sent = false;
    const onToken = opts?.onToken;
    const call = modelCall(attempt, {
      ...(opts?.signal ? { signal: opts.signal } : {}),
      ...(onToken
        ? {
            onToken: (text: string) => {
              sent = true;
              onToken(text);
            },
          }
        : {}),
    });
    try {
      return await run(client, call);
    } catch (err) {
      throw sent ? new StreamStartedError(err) : err;
    }
  };
}

export async function graftRouted(
  ctx: CallContext,
  req: Omit<GraftRequest, "stream">,
  opts?: ModelCallOptions,
): Promise<Routed<GenerationResult>> {
  const candidates = preferIdle(
    await graftCandidates(ctx.db, req.blockId, await ctx.directory.nodes()),
    (id) => ctx.metrics.of(id).inFlight,
  );
  if (candidates.length === 0) throw noReplica(ctx.settings, req.blockId);
  const out = await ctx.failover(
    candidates.map((c) => c.id),
    streamedOnce(opts, (c, call) => (opts?.onToken ? c.graftStream(req, call) : c.graft(req, call))),
    async (nodeId) => {
      // The node does not hold it after all (or held a copy that failed its check): forget the
      // record, try the other holder; the rebalancer recopies it.
      await removeReplica(ctx.db, req.blockId, nodeId).catch(() => undefined);
      ctx.requestRebalance("replica missing");
    },
  );
  const tier = candidates.find((c) => c.id === out.nodeId)?.tier ?? null;
  if (tier) ctx.metrics.of(out.nodeId).grafts[tier]++;
  // The tier the node says it restored from, which can differ from the one the edge expected.
  const restored = ctx.metrics.of(out.nodeId).restores[out.result.tier ?? tier ?? "cold"];
  restored.count++;
  restored.msSum += out.result.timings.restoreMs;
  return { ...out, tier };
}

export async function depositPlaced(
  ctx: CallContext,
  text: string,
): Promise<{ manifest: BlockManifest; nodeId: string }> {
  const order = await depositCandidates(text, await ctx.directory.nodes());
  if (order.length === 0) throw noReplica(ctx.settings);
  const out = await ctx.failover(order, (c, opts) => c.deposit(text, opts));
  return { manifest: out.result, nodeId: out.nodeId };
}
