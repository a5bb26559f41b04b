/**
 * The GPU node's persisted nonces (gpu-node/server/nonce-log.ts): what one process accepted, the
 * next one on the same file refuses; expired entries and a torn last line (a kill mid-write) are
 * dropped when the file is read back, and the file is rewritten without them; the file stays
 * within twice the nonces of the time window; on a full disk nonces are kept in memory with a
 * floor for the next process, or, failing that, refused.
 */
import { execFileSync } from "node:child_process";
import {
  appendFileSync,
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NonceLog } from "../gpu-node/server/nonce-log.js";
import { DomainError } from "../shared/errors.js";

const nonce = (i: number) => i.toString(16).padStart(32, "0");

describe("NonceLog", () => {
  it("keeps live nonces across a reopen, drops expired ones and a torn line", () => {
    const path = join(mkdtempSync(join(tmpdir(), "kvgraft-nonces-")), "nonces.log");
    const t0 = 1_000_000_000_000;
    const first = NonceLog.open(path, t0);
    first.add(nonce(1), t0);
    first.add(nonce(2), t0 + 1000);
    appendFileSync(path, `${nonce(3).slice(0, 20)}`);
    // After the first nonce's time to live, before the second's.
    const later = t0 + first.ttlMs + 500;
    const second = NonceLog.open(path, later);
    expect(second.has(nonce(1), later)).toBe(false);
    expect(second.has(nonce(2), later)).toBe(true);
    expect(second.has(nonce(3), later)).toBe(false);
    expect(readFileSync(path, "utf8")).toBe(
      `# unpersisted-until-s ${"0".repeat(15)}\n${nonce(2)} ${t0 + 1000 + first.ttlMs}\n`,
    );
    second.add(nonce(4), later);
    expect(NonceLog.open(path, later).has(nonce(4), later)).toBe(true);
  });
});

describe("NonceLog bounds", () => {
  it("keeps the file within twice the nonces of the time window", () => {
    const path = join(mkdtempSync(join(tmpdir(), "kvgraft-nonces-")), "nonces.log");
    const t0 = 1_000_000_000_000;
    const log = NonceLog.open(path, t0);
    // One nonce every 100 ms for three times the time to live: a third of them are live at the end.
    const step = 100;
    const count = (3 * log.ttlMs) / step;
    for (let i = 0; i < count; i++) log.add(nonce(i), t0 + i * step);
    const live = log.ttlMs / step;
    const lines = readFileSync(path, "utf8").split("\n").filter(Boolean).length;
    expect(lines).toBeLessThanOrEqual(2 * Math.max(live, 1024) + 1);
    const now = t0 + (count - 1) * step;
    expect(NonceLog.open(path, now).has(nonce(count - 1), now)).toBe(true);
    expect(NonceLog.open(path, now).has(nonce(count - live - 10), now)).toBe(false);
  });
});

/**
 * A full disk, for real: a small tmpfs (root only; skipped with the reason otherwise), filled
 * with a file until the kernel answers ENOSPC.
 */
describe("NonceLog on a full disk", () => {
  const mnt = mkdtempSync(join(tmpdir(), "kvgraft-nonces-fs-"));
  let mounted = false;
  beforeAll(() => {
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], { stdio: "pipe" });
      mounted = true;
    } catch (err) {
      mounted = false;
      console.warn(
        `nonce-log.test: full-disk cases skipped: mount -t tmpfs not permitted (${(err as Error).message})`,
      );
    }
  });
  afterAll(() => {
    if (mounted) execFileSync("umount", [mnt]);
    rmSync(mnt, { recursive: true, force: true });
  });
  const skipUnlessMounted = (ctx: { skip(note: string): void }) => {
    if (!mounted) ctx.skip("mount -t tmpfs is not permitted here (needs root / CAP_SYS_ADMIN)");
  };
  /** Writes a file in `dir` until the file system is full. */
  const fill = (dir: string) => {
    const filler = join(dir, "filler");
    const fd = openSync(filler, "w");
    try {
      for (;;) writeSync(fd, Buffer.alloc(1024));
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
    } finally {
      closeSync(fd);
    }
    return filler;
  };
  const wellFormed = (path: string) =>
    readFileSync(path, "utf8")
      .split("\n")
      .filter(Boolean)
      .every((l) => /^([0-9a-f]{32} \d{1,15}|# unpersisted-until-s \d{15})$/.test(l));

  it("keeps accepting in memory, and a reopened log refuses signatures up to the newest of those", (ctx) => {
    skipUnlessMounted(ctx);
    const dir = mkdtempSync(join(mnt, "a-"));
    const path = join(dir, "nonces.log");
    const t0 = Date.now();
    const log = NonceLog.open(path, t0);
    for (let i = 0; i < 5; i++) log.add(nonce(i), t0, Math.floor(t0 / 1000));
    const filler = fill(dir);
    // More lines than the file's last page has room for: some cannot be written.
    const signedAtS = Math.floor(t0 / 1000) + 7;
    for (let i = 100; i < 400; i++) log.add(nonce(i), t0 + i, signedAtS);
    expect(log.state(t0 + 400)).toBe("memory");
    expect(log.has(nonce(399), t0 + 400)).toBe(true);
    expect(wellFormed(path)).toBe(true);

    const reopened = NonceLog.open(path, t0 + 500);
    expect(reopened.notBeforeS).toBe(signedAtS + 1);
    expect(reopened.has(nonce(0), t0 + 500)).toBe(true);

    // Room again: the next line is written, and a compaction (tried at most once a second while
    // behind) puts the memory-only ones on disk.
    rmSync(filler);
    log.add(nonce(400), t0 + 2000, signedAtS);
    expect(log.state(t0 + 2000)).toBe("ok");
    const after = NonceLog.open(path, t0 + 2100);
    for (const i of [0, 100, 399, 400]) expect(after.has(nonce(i), t0 + 2100)).toBe(true);
  });

  it("refuses with 507 nonce_log_full when not even its header can be written", (ctx) => {
    skipUnlessMounted(ctx);
    const dir = mkdtempSync(join(mnt, "b-"));
    const path = join(dir, "nonces.log");
    const t0 = Date.now();
    // A log written before the header existed, on a disk that fills before the log is reopened.
    writeFileSync(path, `${nonce(1)} ${t0 + 600_000}\n`);
    const filler = fill(dir);
    const log = NonceLog.open(path, t0);
    let refused: unknown = null;
    for (let i = 10; i < 400 && !refused; i++) {
      try {
        log.add(nonce(i), t0 + i);
      } catch (err) {
        refused = err;
      }
    }
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused).toMatchObject({ status: 507, code: "nonce_log_full" });
    expect(log.state(t0 + 400)).toBe("refusing");
    expect(wellFormed(path)).toBe(true);
    rmSync(filler);
    log.add(nonce(500), t0 + 2000);
    expect(log.state(t0 + 2000)).toBe("ok");
    expect(NonceLog.open(path, t0 + 2100).has(nonce(1), t0 + 2100)).toBe(true);
  });
});
