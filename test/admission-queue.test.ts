/**
 * The model work queue (gpu-node/server/queue.ts): a job with a deadline that the jobs ahead of it
 * and its own would overrun, at the mean time a job has held its place, is refused at once (429)
 * instead of waiting to be cut; one with time enough waits its turn. Real timers, the real class.
 */
import { describe, expect, it } from "vitest";
import { AdmissionQueue } from "../gpu-node/server/queue.js";
import { DomainError } from "../shared/errors.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("AdmissionQueue's deadline bound", () => {
  it("refuses a job that could not finish by its deadline and admits one that could", async () => {
    const queue = new AdmissionQueue(1, 8);
    expect(queue.expectedWaitMs()).toBe(0);
    // No job has ended yet: nothing to go by, so a short deadline still waits.
    const first = await queue.acquire(undefined, 10);
    await sleep(120);
    first();
    const held = await queue.acquire();
    // One job ahead of a newcomer, each ~120 ms: ~240 ms to its end.
    expect(queue.expectedWaitMs()).toBeGreaterThanOrEqual(110);
    const refused = await queue.acquire(undefined, 150).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused).toMatchObject({ status: 429, code: "queue_full" });
    expect(queue.stats).toMatchObject({ running: 1, waiting: 0, rejected: 1 });
    const patient = queue.acquire(undefined, 5000);
    expect(queue.stats.waiting).toBe(1);
    held();
    const release = await patient;
    expect(queue.stats).toMatchObject({ running: 1, waiting: 0 });
    release();
    expect(queue.stats.running).toBe(0);
  });

  it("admits at once while a place is free, whatever the deadline", async () => {
    const queue = new AdmissionQueue(2, 0);
    const a = await queue.acquire();
    await sleep(50);
    a();
    const b = await queue.acquire(undefined, 1);
    const c = await queue.acquire(undefined, 1);
    expect(queue.stats.running).toBe(2);
    b();
    c();
  });
});
