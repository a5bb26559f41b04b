/**
 * `bench library`'s probe checks are real: on tiny-llama every access runs the block service's
 * post-restore check over the full vocabulary, and a block whose manifest promises another
 * probe hash is counted as a mismatch (and quarantined), not reported equal.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { benchLibrary, type LibraryBenchOptions } from "../bench/library-bench.js";
import type { BlockManifest } from "../shared/protocol.js";
import { syntheticModel } from "./helpers/models.js";

const dataDir = mkdtempSync(join(tmpdir(), "kvgraft-library-probe-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const options = (): LibraryBenchOptions => ({
  modelPath: syntheticModel("tiny-llama"),
  blocks: 3,
  blockTokens: 64,
  depths: [0, 64, 128],
  accesses: 1,
  kv: "f16",
  dataDir,
  engine: { binary: "cpu" },
  dropPageCache: false,
  log: () => undefined,
});

describe("bench library probe checks (tiny-llama)", () => {
  it("counts every check, all equal; then counts a planted mismatch", async () => {
    const clean = await benchLibrary(options());
    expect(clean.probeChecks).toBe(6);
    expect(clean.probeMismatches).toBe(0);
    expect(clean.probeEntries).toBe(1024);
    expect(clean.allProbesEqual).toBe(true);

    // Plant: block 1's manifest now carries block 0's probe hash; its state file is untouched.
    const index = JSON.parse(readFileSync(join(dataDir, "library-index.json"), "utf8")) as string[];
    const manifestOf = (i: number) => join(dataDir, "blocks", `${index[i]}.json`);
    const m1 = JSON.parse(readFileSync(manifestOf(1), "utf8")) as BlockManifest;
    const m0 = JSON.parse(readFileSync(manifestOf(0), "utf8")) as BlockManifest;
    writeFileSync(manifestOf(1), JSON.stringify({ ...m1, probe: { ...m1.probe, sha256: m0.probe.sha256 } }));

    const planted = await benchLibrary({ ...options(), accesses: 2 });
    expect(planted.resumedBlocks).toBe(3);
    expect(planted.probeMismatches).toBe(1);
    expect(planted.allProbesEqual).toBe(false);
    // Depths 0 and 128: two accesses of two checks; depth 64: one refused check, then skipped.
    expect(planted.probeChecks).toBe(4 + 4 + 1);
    expect(planted.depths.map((d) => [d.depth, d.probeChecks, d.probeMismatches, d.skipped])).toEqual([
      [0, 4, 0, 0],
      [64, 1, 1, 1],
      [128, 4, 0, 0],
    ]);
    expect(
      readdirSync(join(dataDir, "quarantine")).filter((n) => n.startsWith(index[1] as string)),
    ).toHaveLength(2);
  });
});
