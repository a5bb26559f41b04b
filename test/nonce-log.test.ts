/**
 * The GPU node's persisted nonces (gpu-node/server/nonce-log.ts): what one process accepted, the
 * next one on the same file refuses; expired entries and a torn last line (a kill mid-write) are
 * dropped when the file is read back, and the file is rewritten without them.
 */
import { appendFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NonceLog } from "../gpu-node/server/nonce-log.js";

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
    expect(readFileSync(path, "utf8")).toBe(`${nonce(2)} ${t0 + 1000 + first.ttlMs}\n`);
    second.add(nonce(4), later);
    expect(NonceLog.open(path, later).has(nonce(4), later)).toBe(true);
  });
});
