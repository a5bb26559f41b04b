/**
 * The context's sequence slots as the hot tier. Each slot may hold one block resident at
 * positions [0, n): a graft on it only erases the slot's tail. A request for a block takes an
 * idle slot that holds it; when every holder is busy it takes another free slot (a second copy)
 * rather than wait. The admission queue (server/queue.ts) lets in no more work than there are
 * slots, so a request waiting here for a busy holder always left a free slot idle for the rest of
 * that graft: one hot block on 4 slots decoded 3 sequences a step at most (bench serve, CPU).
 * Free slots are reused least valuable first (empty, then least recently used). Waiting (only
 * when no slot is free) is bounded; a full queue is a 429. A slot that cannot be wiped after a
 * failure is retired: it is never leased again (the node reports itself degraded).
 */
import type { LlamaContextSequence } from "node-llama-cpp";
import { wipeSequence } from "../../engine/state.js";
import { tooManyRequests, unavailable } from "../../errors.js";

/** One sequence slot and what it holds. */
export interface Slot {
  readonly index: number;
  readonly sequence: LlamaContextSequence;
  /** Block resident at positions [0, tokenCount), or null. */
  block: string | null;
  busy: boolean;
  /** Could not be wiped after a failure: out of service for the life of the process. */
  retired: boolean;
  lastUsed: number;
}

/** An exclusive hold on a slot; `hot` tells whether it already holds the wanted block. */
export interface SlotLease {
  slot: Slot;
  hot: boolean;
  /** Releases the slot, recording which block (if any) it now holds at [0, n). */
  release(residentBlock: string | null): void;
}

interface Waiter {
  block: string | null;
  resolve: (lease: SlotLease) => void;
  reject: (err: unknown) => void;
}

export class SlotPool {
  readonly slots: Slot[];
  private readonly waiters: Waiter[] = [];
  private clock = 0;

  constructor(
    sequences: LlamaContextSequence[],
    readonly maxWaiting: number,
  ) {
    this.slots = sequences.map((sequence, index) => ({
      index,
      sequence,
      block: null,
      busy: false,
      retired: false,
      lastUsed: 0,
    }));
  }

  get queueDepth(): number {
    return this.waiters.length;
  }

  get busyCount(): number {
    return this.slots.filter((s) => s.busy).length;
  }

  /** Slots retired because they could not be wiped. */
  get retiredCount(): number {
    return this.slots.filter((s) => s.retired).length;
  }

  /** Blocks resident in slots. */
  hotBlocks(): string[] {
    return this.slots.flatMap((s) => (s.block ? [s.block] : []));
  }

  /** Acquires a slot for `block` (or for plain work when null), waiting when all are busy. */
  acquire(block: string | null, signal?: AbortSignal): Promise<SlotLease> {
    if (this.retiredCount === this.slots.length) return Promise.reject(noSlots());
    const lease = this.tryAcquire(block);
    if (lease) return Promise.resolve(lease);
    if (this.waiters.length >= this.maxWaiting)
      return Promise.reject(tooManyRequests("queue_full", "all slots are busy and the queue is full", 1));
    return new Promise<SlotLease>((resolve, reject) => {
      const waiter: Waiter = { block, resolve, reject };
      this.waiters.push(waiter);
      signal?.addEventListener(
        "abort",
        () => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) {
            this.waiters.splice(i, 1);
            reject(signal.reason);
          }
        },
        { once: true },
      );
    });
  }

  /**
   * Releases a slot after a failure with every cell of its sequence removed (a failed load can
   * leave cells at any position); a slot that cannot be wiped or still holds cells is retired.
   */
  async releaseWiped(lease: SlotLease): Promise<void> {
    const clean = await wipeSequence(lease.slot.sequence).catch(() => false);
    if (!clean) lease.slot.retired = true;
    lease.release(null);
  }

  /**
   * Another slot holding `block` resident at [0, n) (busy or not: its cells below n do not change
   * while its tail is decoded), for a device-side copy; null when none does.
   */
  holderOf(block: string, except: Slot): Slot | null {
    return this.slots.find((s) => s !== except && !s.retired && s.block === block) ?? null;
  }

  /** Forgets a block in every idle slot that holds it (after deletion or quarantine). */
  evict(block: string): void {
    for (const s of this.slots) if (s.block === block && !s.busy) s.block = null;
  }

  /** An idle holder of `block`, else the least valuable free slot; null when none is free. */
  private tryAcquire(block: string | null): SlotLease | null {
    const free = this.slots.filter((s) => !s.busy && !s.retired);
    const idleHolder = block ? free.find((s) => s.block === block) : undefined;
    if (idleHolder) return this.lease(idleHolder, true);
    if (free.length === 0) return null;
    // Least valuable slot first: empty, then least recently used.
    free.sort((a, b) => Number(a.block !== null) - Number(b.block !== null) || a.lastUsed - b.lastUsed);
    return this.lease(free[0] as Slot, false);
  }

  private lease(slot: Slot, hot: boolean): SlotLease {
    slot.busy = true;
    slot.lastUsed = ++this.clock;
    if (!hot) slot.block = null;
    let released = false;
    return {
      slot,
      hot,
      release: (residentBlock) => {
        if (released) return;
        released = true;
        slot.block = slot.retired ? null : residentBlock;
        slot.busy = false;
        slot.lastUsed = ++this.clock;
        this.drain();
      },
    };
  }

  private drain(): void {
    if (this.retiredCount === this.slots.length) {
      for (const w of this.waiters.splice(0)) w.reject(noSlots());
      return;
    }
    // In arrival order while a slot is free: any free slot serves any waiter.
    while (this.waiters.length > 0) {
      const lease = this.tryAcquire((this.waiters[0] as Waiter).block);
      if (!lease) return;
      (this.waiters.shift() as Waiter).resolve(lease);
    }
  }
}

function noSlots() {
  return unavailable("no_slots", "every slot of this node is retired; restart it");
}
