/**
 * The GPU node's nonce cache, kept on disk so that a restart opens no replay window: every
 * accepted nonce is appended to a file with its expiry, and the live ones are read back at start.
 * A line is written before the request runs, so a nonce that was accepted is never accepted again
 * by a later process on the same data directory.
 *
 * Bounded by the signature's time window: the file is rewritten with only the live entries (those
 * of the last `ttlMs`) once it holds twice as many lines as that, so it never grows without limit.
 *
 * When a line cannot be written (a full disk), the file is first compacted (dropping expired
 * lines may make room). If that fails too, the nonce is kept in memory only, which is safe while
 * this process lives; for the next one, the file's first line (a fixed-width header, overwritten
 * in place: no new block is needed) records the newest signature time accepted that way, and a
 * process opened on the file refuses every signature stamped at or before it (`notBeforeS`). Only
 * when even that header cannot be written is the request refused (507 `nonce_log_full`): failing
 * closed, never accepting a nonce a restart could accept again.
 */
import {
  appendFileSync,
  closeSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { NonceCache } from "../../shared/signing.js";
import { nodeError } from "../errors.js";

const LINE = /^([0-9a-f]{32}) (\d{1,15})$/;
/** The header: signatures stamped at or before this second may have been accepted unpersisted. */
const HEADER = /^# unpersisted-until-s (\d{15})$/;
const header = (untilS: number) => `# unpersisted-until-s ${String(untilS).padStart(15, "0")}\n`;
/** The file is compacted past twice its live entries, or past twice this many lines when fewer live. */
const MIN_COMPACT_LINES = 1024;
/** While lines cannot be written, a compaction is tried at most this often. */
const RETRY_COMPACT_MS = 1000;

/**
 * Where the log stands: `ok`, every live nonce is on disk; `memory`, some are only in memory (the
 * header protects a restart); `refusing`, the last nonce could not be recorded at all and its
 * request was refused.
 */
export type NonceLogState = "ok" | "memory" | "refusing";

export class NonceLog extends NonceCache {
  private lines = 0;
  /** The file's length after its last complete line. */
  private bytes = 0;
  /** The header's value; 0 when every accepted nonce was persisted. */
  private unpersistedUntilS = 0;
  /** Whether the file starts with a header that can be overwritten in place. */
  private hasHeader = false;
  /** The expiry (ms) of the newest nonce kept in memory only; 0 when none. */
  private memoryOnlyUntilMs = 0;
  private refusing = false;
  private nextCompactMs = 0;

  private constructor(readonly path: string) {
    super();
  }

  /**
   * Signatures stamped before this second must be refused: an earlier process accepted some up
   * to the second before it without persisting their nonces. Undefined when none did.
   */
  get notBeforeS(): number | undefined {
    return this.unpersistedUntilS > 0 ? this.unpersistedUntilS + 1 : undefined;
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
    const lines = text.split("\n");
    const first = HEADER.exec(lines[0] ?? "");
    if (first?.[1]) {
      log.unpersistedUntilS = Number(first[1]);
      log.hasHeader = true;
    }
    for (const line of lines) {
      const m = LINE.exec(line);
      const expiry = Number(m?.[2]);
      // A torn last line (killed mid-write) matches nothing and is dropped.
      if (m?.[1] && expiry > now) log.remember(m[1], expiry);
    }
    if (!log.compact(now)) {
      // A full disk: keep the file as it is, without its torn last line, so appends stay whole.
      log.bytes = text.lastIndexOf("\n") + 1;
      log.lines = lines.length - 1;
      if (text.length > 0) truncateSync(path, log.bytes);
    }
    return log;
  }

  /** Where the log stands (see NonceLogState). */
  state(now = Date.now()): NonceLogState {
    if (this.refusing) return "refusing";
    return this.memoryOnlyUntilMs > now ? "memory" : "ok";
  }

  /**
   * Records `nonce` in memory and on disk (or, on a full disk, see the module comment).
   * `signedAtS`: the signature's timestamp; without it, the latest it can be (now plus the skew,
   * half the time to live).
   */
  override add(nonce: string, now = Date.now(), signedAtS = Math.ceil((now + this.ttlMs / 2) / 1000)): void {
    super.add(nonce, now);
    if (this.append(`${nonce} ${now + this.ttlMs}\n`)) {
      this.refusing = false;
      // Once lines fit again, a compaction puts the nonces kept in memory only back on disk.
      const behind = this.memoryOnlyUntilMs > now && now >= this.nextCompactMs;
      if ((behind || this.lines > 2 * Math.max(this.size, MIN_COMPACT_LINES)) && !this.compact(now))
        this.nextCompactMs = now + RETRY_COMPACT_MS;
      return;
    }
    // Compacting writes every live entry, this one included, when it finds the room.
    if (now >= this.nextCompactMs && this.compact(now)) return;
    this.nextCompactMs = now + RETRY_COMPACT_MS;
    if (this.markUnpersisted(Math.max(this.unpersistedUntilS, signedAtS))) {
      this.memoryOnlyUntilMs = Math.max(this.memoryOnlyUntilMs, now + this.ttlMs);
      this.refusing = false;
      return;
    }
    this.refusing = true;
    throw nodeError(
      507,
      "nonce_log_full",
      "the node cannot record this request's nonce (its disk is full or refuses writes), so it refuses signed requests: none may be replayable after a restart",
    );
  }

  private remember(nonce: string, expiry: number): void {
    super.add(nonce, expiry - this.ttlMs);
  }

  /** Appends one line; on failure, cuts off whatever part of it was written. */
  private append(line: string): boolean {
    try {
      appendFileSync(this.path, line);
      this.bytes += Buffer.byteLength(line);
      this.lines++;
      return true;
    } catch {
      try {
        truncateSync(this.path, this.bytes);
      } catch {
        // A part of a line left at the end is read back as a torn line and dropped.
      }
      return false;
    }
  }

  /** Overwrites the header in place with `untilS`; false when there is no header or the write fails. */
  private markUnpersisted(untilS: number): boolean {
    if (!this.hasHeader) return false;
    let fd: number | undefined;
    try {
      fd = openSync(this.path, "r+");
      writeSync(fd, header(untilS), 0);
      this.unpersistedUntilS = untilS;
      return true;
    } catch {
      return false;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Rewrites the file with its header and the live entries; false (nothing changed) when it cannot. */
  private compact(now = Date.now()): boolean {
    const live = [...this.recorded()].filter(([, expiry]) => expiry > now);
    const text =
      header(this.unpersistedUntilS) + live.map(([nonce, expiry]) => `${nonce} ${expiry}\n`).join("");
    const temp = `${this.path}.tmp`;
    try {
      writeFileSync(temp, text);
      renameSync(temp, this.path);
    } catch {
      rmSync(temp, { force: true });
      return false;
    }
    this.hasHeader = true;
    this.lines = live.length;
    this.bytes = Buffer.byteLength(text);
    this.memoryOnlyUntilMs = 0;
    this.refusing = false;
    return true;
  }
}
