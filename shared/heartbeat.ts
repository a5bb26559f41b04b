/**
 * GPU node registration and heartbeats. A node configured with an edge URL posts a signed
 * heartbeat (shared/signing.ts, the same shared secret as the edge's requests) every interval:
 * its id and URL, model and engine fingerprints, capacity, and the contents of its hot and warm
 * tiers, which the edge uses for placement and affinity routing. The first beat registers the node;
 * a beat with status `draining` (sent when the node stops) takes it out of routing at once.
 *
 * Runtime-neutral apart from the timers (fetch, Web Crypto, zod), so the edge imports the schema
 * from here.
 */
import { z } from "zod";
import { createLogger, type Logger } from "./http/logger.js";
import {
  engineFingerprintSchema,
  type Health,
  modelFingerprintSchema,
  sha256Schema,
  tierBytesSchema,
} from "./protocol.js";
import { signRequest } from "./signing.js";

/** Edge path the heartbeats go to (outside `/v1` and `/admin`: it is signed, not keyed). */
export const HEARTBEAT_PATH = "/cluster/heartbeat";

export const nodeIdSchema = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/);

export const heartbeatSchema = z
  .object({
    id: nodeIdSchema,
    /** Where the edge reaches the node. */
    url: z.url(),
    /** `degraded`: serving with fewer slots (one could not be wiped and was retired). */
    status: z.enum(["ok", "degraded", "draining"]),
    model: modelFingerprintSchema,
    engine: engineFingerprintSchema,
    capacity: z.object({
      slots: z.number().int().nonnegative(),
      queueCapacity: z.number().int().nonnegative(),
      tiers: z.array(z.enum(["hot", "warm", "cold"])),
    }),
    tiers: z.object({
      hot: z.array(sha256Schema).max(10_000),
      warm: z.array(sha256Schema).max(100_000),
      coldCount: z.number().int().nonnegative(),
      /**
       * Optional: nodes older than this field send none. Inside `tiers`, not at the top level, so an
       * older edge (which drops unknown keys here but refuses them at the top) accepts a newer node.
       */
      bytes: tierBytesSchema.optional(),
      /**
       * Blocks the node found damaged and quarantined since it started (warm start's hash checks):
       * no longer stored there. Optional, like `bytes`.
       */
      corrupt: z.array(sha256Schema).max(10_000).optional(),
    }),
    queue: z.object({ depth: z.number().int().nonnegative(), capacity: z.number().int().nonnegative() }),
  })
  .strict();
export type Heartbeat = z.infer<typeof heartbeatSchema>;

/** The edge's answer to a heartbeat. */
export const heartbeatResultSchema = z.object({
  node: z.object({ id: z.string(), status: z.enum(["up", "down"]) }),
  /** The interval the edge expects (it counts beats missed against it). */
  intervalMs: z.number().int().positive().optional(),
});

/** A heartbeat from the node's health. */
export function heartbeatFrom(id: string, url: string, health: Health): Heartbeat {
  return {
    id,
    url,
    status: health.status,
    model: health.model,
    engine: health.engine,
    capacity: {
      slots: health.slots.total - (health.slots.retired ?? 0),
      queueCapacity: health.queue.capacity,
      tiers: ["hot", "warm", "cold"],
    },
    tiers: health.tiers,
    queue: health.queue,
  };
}

export interface HeartbeatOptions {
  edgeUrl: string;
  secret: string;
  intervalMs: number;
  /** The current heartbeat (called before each beat). */
  report: () => Heartbeat;
  /** Where outages and recoveries are reported; default JSON lines on stderr. */
  logger?: Logger;
  fetch?: typeof fetch;
}

/** Sends one signed heartbeat; resolves to the edge's answer or throws. */
export async function sendHeartbeat(
  options: Pick<HeartbeatOptions, "edgeUrl" | "secret" | "fetch">,
  beat: Heartbeat,
  timeoutMs = 5_000,
): Promise<z.infer<typeof heartbeatResultSchema>> {
  const body = JSON.stringify(heartbeatSchema.parse(beat));
  const signature = await signRequest({ secret: options.secret, method: "POST", path: HEARTBEAT_PATH, body });
  const doFetch = options.fetch ?? fetch;
  const res = await doFetch(`${options.edgeUrl.replace(/\/+$/, "")}${HEARTBEAT_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...signature },
    body,
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) {
    const text = await res.text().catch(() => "");
    throw new Error(`edge answered HTTP ${res.status} ${text.slice(0, 200)}`);
  }
  return heartbeatResultSchema.parse(await res.json());
}

/** A running heartbeat loop. */
export interface HeartbeatLoop {
  /** Beats sent and failed so far. */
  readonly stats: { sent: number; failed: number };
  /** Sends a beat now (outside the schedule); resolves when answered or failed. */
  beat(): Promise<boolean>;
  /** Stops the loop; with `final`, sends one last beat first (a draining node says so). */
  stop(final?: Heartbeat): Promise<void>;
}

/** Starts beating at once, then every `intervalMs`. Failures are logged once per outage. */
export function startHeartbeat(options: HeartbeatOptions): HeartbeatLoop {
  const log = options.logger ?? createLogger();
  const stats = { sent: 0, failed: 0 };
  let failing = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeoutMs = Math.max(500, Math.min(5_000, options.intervalMs));

  async function beat(report: Heartbeat = options.report()): Promise<boolean> {
    try {
      await sendHeartbeat(options, report, timeoutMs);
      stats.sent++;
      if (failing) log.info("heartbeat: edge reachable again", { edgeUrl: options.edgeUrl });
      failing = false;
      return true;
    } catch (err) {
      stats.failed++;
      if (!failing)
        log.warn("heartbeat: cannot reach edge", { edgeUrl: options.edgeUrl, error: (err as Error).message });
      failing = true;
      return false;
    }
  }

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      void beat().finally(schedule);
    }, options.intervalMs);
    // A Node timer object (a number where the Workers types apply).
    (timer as { unref?: () => void }).unref?.();
  };
  void beat().finally(schedule);

  return {
    stats,
    beat: () => beat(),
    async stop(final) {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (final) await beat(final);
    },
  };
}
