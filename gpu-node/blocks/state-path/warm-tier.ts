/**
 * The warm tier: copies of block files in RAM (a private folder on tmpfs, /dev/shm by default)
 * up to a byte budget, least-recently-used out first. A copy is hash-checked while it is made,
 * and the folder is private to this process (mode 0700) and emptied at start.
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";

/** Outcome of putting a block into a warm tier (tmpfs copy or pinned arena). */
export type WarmCopy = "warm" | "corrupt" | "unavailable";

export class WarmTier {
  private readonly entries = new Map<string, { bytes: number; lastUsed: number }>();
  private used = 0;
  private clock = 0;
  private readonly inFlight = new Map<string, Promise<WarmCopy>>();

  private constructor(
    readonly dir: string,
    readonly budgetBytes: number,
  ) {}

  /** Creates (emptying) the folder. A budget of 0 disables the tier. */
  static async open(dir: string, budgetBytes: number): Promise<WarmTier> {
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return new WarmTier(dir, budgetBytes);
  }

  get usedBytes(): number {
    return this.used;
  }

  blocks(): string[] {
    return [...this.entries.keys()];
  }

  has(sha: string): boolean {
    return this.entries.has(sha);
  }

  /** Path of the RAM copy when present (and marks it used), else null. */
  path(sha: string): string | null {
    const e = this.entries.get(sha);
    if (!e) return null;
    e.lastUsed = ++this.clock;
    return join(this.dir, `${sha}.state`);
  }

  /** The copy of `sha` being made now, if any (a restore waits for it rather than reading the file again). */
  pending(sha: string): Promise<WarmCopy> | undefined {
    return this.inFlight.get(sha);
  }

  /**
   * Copies a block file in, evicting least-recently-used copies to fit, in one read that hashes
   * the bytes: "corrupt" when their size or SHA-256 differ from the block's (nothing is kept),
   * "unavailable" when the block alone exceeds the budget or the copy fails otherwise.
   */
  add(sha: string, sourcePath: string, bytes: number): Promise<WarmCopy> {
    if (this.entries.has(sha)) return Promise.resolve("warm");
    if (bytes > this.budgetBytes) return Promise.resolve("unavailable");
    const pending = this.inFlight.get(sha);
    if (pending) return pending;
    const work = this.copy(sha, sourcePath, bytes).finally(() => this.inFlight.delete(sha));
    this.inFlight.set(sha, work);
    return work;
  }

  private async copy(sha: string, sourcePath: string, bytes: number): Promise<WarmCopy> {
    await this.makeRoom(bytes);
    const target = join(this.dir, `${sha}.state`);
    const temp = `${target}.tmp`;
    const hash = createHash("sha256");
    let read = 0;
    const source = createReadStream(sourcePath, { highWaterMark: 1 << 24 });
    source.on("data", (chunk) => {
      hash.update(chunk as Buffer);
      read += chunk.length;
    });
    try {
      await pipeline(source, createWriteStream(temp, { mode: 0o600 }));
    } catch {
      await rm(temp, { force: true });
      return "unavailable";
    }
    if (read !== bytes || hash.digest("hex") !== sha) {
      await rm(temp, { force: true });
      return "corrupt";
    }
    await rename(temp, target);
    this.entries.set(sha, { bytes, lastUsed: ++this.clock });
    this.used += bytes;
    return "warm";
  }

  /** Drops a copy (after deletion or quarantine of the block). */
  async remove(sha: string): Promise<void> {
    const e = this.entries.get(sha);
    if (!e) return;
    this.entries.delete(sha);
    this.used -= e.bytes;
    await rm(join(this.dir, `${sha}.state`), { force: true });
  }

  private async makeRoom(bytes: number): Promise<void> {
    const byAge = [...this.entries.entries()].sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [sha] of byAge) {
      if (this.used + bytes <= this.budgetBytes) break;
      await this.remove(sha);
    }
  }

  /** Removes the folder. */
  async close(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * Removes the default warm-tier folders (`kvgraft-warm-<pid>`, RAM on tmpfs) of processes that
 * are gone: a node killed with SIGKILL never runs its close(), and its RAM copies would stay.
 */
export async function sweepDeadWarmDirs(dir: string): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(/^kvgraft-warm-(\d+)$/.exec(name)?.[1]);
    if (!pid || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ESRCH")
        await rm(join(dir, name), { recursive: true, force: true }).catch(() => undefined);
    }
  }
}
