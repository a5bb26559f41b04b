/**
 * The GPU node's nonce cache, kept on disk so that a restart opens no replay window: every
 * accepted nonce is appended to a file with its expiry, and the live ones are read back at start.
 * A line is written before the request runs, so a nonce that was accepted is never accepted again
 * by a later process on the same data directory.
 */
import { appendFileSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { NonceCache } from "../../shared/signing.js";

const LINE = /^([0-9a-f]{32}) (\d{1,15})$/;

export class NonceLog extends NonceCache {
  private lines = 0;

  private constructor(readonly path: string) {
    super();
  }

  /** Opens the log at `path`, keeping the entries that have not expired at `now` (ms). */
  static open(path: string, now = Date.now()): NonceLog {
    const log = new NonceLog(path);
    let text = "";
    try {
      text = readFileSync(path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    for (const line of text.split("\n")) {
      const m = LINE.exec(line);
      const expiry = Number(m?.[2]);
      // A torn last line (killed mid-write) matches nothing and is dropped.
      if (m?.[1] && expiry > now) log.remember(m[1], expiry);
    }
    log.compact(now);
    return log;
  }

  /** Records `nonce` in memory and on disk. */
  override add(nonce: string, now = Date.now()): void {
    super.add(nonce, now);
    appendFileSync(this.path, `${nonce} ${now + this.ttlMs}\n`);
    // Rewrite the file with the live entries once it holds many more lines than the cache.
    if (++this.lines > 2 * this.maxEntries) this.compact();
  }

  private remember(nonce: string, expiry: number): void {
    super.add(nonce, expiry - this.ttlMs);
  }

  private compact(now = Date.now()): void {
    const live = [...this.recorded()].filter(([, expiry]) => expiry > now);
    const temp = `${this.path}.tmp`;
    writeFileSync(temp, live.map(([nonce, expiry]) => `${nonce} ${expiry}\n`).join(""));
    renameSync(temp, this.path);
    this.lines = live.length;
  }
}
