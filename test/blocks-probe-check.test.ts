/**
 * The post-restore probe check on real llama.cpp inference (tiny-llama): it runs on a block's
 * first restore from a file in a process and whenever a graft asks, leaves the slot exactly at
 * the block's tokens, and refuses and quarantines a block whose manifest's probe hash the
 * restored state does not reproduce (the state file itself intact, so its hash check passes).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { ProbeGate } from "../gpu-node/blocks/restore/probe-check.js";
import { sha256File } from "../gpu-node/blocks/store/block-store.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { evaluateProbe } from "../gpu-node/engine/probe.js";
import { loadSequenceState } from "../gpu-node/engine/state.js";
import { DomainError } from "../shared/errors.js";
import type { BlockManifest } from "../shared/protocol.js";
import { syntheticModel } from "./helpers/models.js";

const QUERY = " What follows from this? Answer:";

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function freshDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `kvgraft-probecheck-${label}-`));
  roots.push(dir);
  return dir;
}

function blockText(label: string): string {
  return Array.from({ length: 12 }, (_, k) => `${label} fact${k} alpha beta`).join(" ");
}

async function expectProbeMismatch(promise: Promise<unknown>): Promise<DomainError> {
  const err = await promise.then(
    () => {
      throw new Error("expected a 409 block_probe_mismatch, got success");
    },
    (e: unknown) => e,
  );
  expect(err, String(err)).toBeInstanceOf(DomainError);
  expect((err as DomainError).code).toBe("block_probe_mismatch");
  expect((err as DomainError).status).toBe(409);
  return err as DomainError;
}

/** Rewrites a stored manifest's probe hash on disk; the state file and its hashes stay valid. */
function alterProbeHash(dataDir: string, blockId: string, sha256: string): void {
  const path = join(dataDir, "blocks", `${blockId}.json`);
  const manifest = JSON.parse(readFileSync(path, "utf8")) as BlockManifest;
  writeFileSync(path, JSON.stringify({ ...manifest, probe: { ...manifest.probe, sha256 } }, null, 2));
}

function quarantined(dataDir: string): string[] {
  return readdirSync(join(dataDir, "quarantine"))
    .map((n) => n.replace(/\.\d+$/, ""))
    .sort();
}

describe("post-restore probe check on tiny-llama", () => {
  let engine: Engine;
  const open = (dataDir: string) =>
    BlockService.open({ engine, dataDir, warmDir: join(freshDir("warm"), "w") });
  beforeAll(async () => {
    engine = await Engine.open({ modelPath: syntheticModel("tiny-llama"), slots: 2, contextSize: 512 });
  });
  afterAll(() => engine?.dispose());

  it("the check leaves the slot at the block's tokens with its state untouched", async () => {
    const dataDir = freshDir("exact");
    const svc = await open(dataDir);
    try {
      const m = await svc.deposit(blockText("exact"));
      const seq = engine.slot(0);
      await loadSequenceState(seq, svc.store.statePath(m.sha256));
      await svc.probes.check(seq, m);
      expect(seq.nextTokenIndex).toBe(m.tokenCount);
      // The state after the check still computes the manifest's vector, bit for bit.
      const again = await evaluateProbe(seq, m.probe.token as Token, engine.vocabSize);
      expect(again.sha256).toBe(m.probe.sha256);
      expect(again.entries).toBe(engine.vocabSize);
      expect(svc.probes.fewestEntries).toBe(engine.vocabSize);
    } finally {
      await svc.close();
      for (const s of engine.slots) await s.clearHistory();
    }
  });

  it("runs on the first restore from a file in a process and when asked; the graft's output is unchanged", async () => {
    const dataDir = freshDir("first");
    const depositor = await open(dataDir);
    const m = await depositor.deposit(blockText("first"));
    // Deposited here, so already checked: no check on this process's grafts unless asked.
    const reference = await depositor.graft(m.sha256, QUERY, { maxTokens: 8 });
    expect(reference.tier).toBe("hot");
    expect(depositor.probes.counts.checks).toBe(0);
    await depositor.close();
    for (const s of engine.slots) await s.clearHistory();

    const svc = await open(dataDir);
    try {
      const cold = await svc.graft(m.sha256, QUERY, { maxTokens: 8 });
      expect(cold.tier).toBe("cold");
      expect(svc.probes.counts).toEqual({ checks: 1, mismatches: 0 });
      expect(cold.outputSha256).toBe(reference.outputSha256);
      // Restored from a file again (RAM copy, then disk): checked once per process, not per load.
      expect(await svc.prefetch(m.sha256, "warm")).toBe("warm");
      svc.pool.evict(m.sha256);
      const warm = await svc.graft(m.sha256, QUERY, { maxTokens: 8 });
      expect(warm.tier).toBe("warm");
      svc.pool.evict(m.sha256);
      await svc.dropRamCopy(m.sha256);
      const coldAgain = await svc.graft(m.sha256, QUERY, { maxTokens: 8 });
      expect(coldAgain.tier).toBe("cold");
      expect(svc.probes.counts.checks).toBe(1);
      // Asked: checked even on the hot tier, and the output is the same.
      const hot = await svc.graft(m.sha256, QUERY, { maxTokens: 8, verifyProbe: true });
      expect(hot.tier).toBe("hot");
      expect(svc.probes.counts).toEqual({ checks: 2, mismatches: 0 });
      for (const r of [warm, coldAgain, hot]) expect(r.outputSha256).toBe(reference.outputSha256);
    } finally {
      await svc.close();
    }
  });

  it("an altered probe hash is refused on the first cold load: 409, quarantined, slot cleared, no RAM copy", async () => {
    const dataDir = freshDir("cold");
    const depositor = await open(dataDir);
    const m = await depositor.deposit(blockText("cold"));
    const other = await depositor.deposit(blockText("other"));
    await depositor.close();
    for (const s of engine.slots) await s.clearHistory();
    // The probe hash of another block: a real vector's hash, just not this state's.
    alterProbeHash(dataDir, m.sha256, other.probe.sha256);
    expect(await sha256File(join(dataDir, "blocks", `${m.sha256}.state`))).toBe(m.sha256);

    const svc = await open(dataDir);
    try {
      expect(svc.list().map((b) => b.sha256)).toContain(m.sha256);
      const err = await expectProbeMismatch(svc.graft(m.sha256, QUERY, { maxTokens: 4 }));
      expect(err.details).toMatchObject({ expected: other.probe.sha256, actual: m.probe.sha256 });
      expect(svc.probes.counts).toEqual({ checks: 1, mismatches: 1 });
      expect(svc.list().map((b) => b.sha256)).toEqual([other.sha256]);
      expect(quarantined(dataDir)).toEqual([`${m.sha256}.json`, `${m.sha256}.state`]);
      expect(engine.slots.map((s) => s.nextTokenIndex)).toEqual([0, 0]);
      expect(svc.snapshot().hot).toEqual([]);
      expect(svc.snapshot().warm).toEqual([]);
      expect(svc.snapshot().slots.busy).toBe(0);
      await expect(svc.graft(m.sha256, QUERY, { maxTokens: 4 })).rejects.toMatchObject({
        code: "block_not_found",
      });
      // The other block still grafts (its own first load is checked and passes).
      const ok = await svc.graft(other.sha256, QUERY, { maxTokens: 4 });
      expect(ok.tier).toBe("cold");
      expect(svc.probes.counts).toEqual({ checks: 2, mismatches: 1 });
    } finally {
      await svc.close();
    }
  });

  it("a hot block whose probe hash no longer matches is served unchecked, and refused with verifyProbe", async () => {
    const dataDir = freshDir("hot");
    const svc = await open(dataDir);
    try {
      const m = await svc.deposit(blockText("hot"));
      // The service's manifest now promises another vector; the slot still holds the block.
      const stored = svc.store.get(m.sha256);
      stored.probe.sha256 = "0".repeat(64);
      const unchecked = await svc.graft(m.sha256, QUERY, { maxTokens: 4 });
      expect(unchecked.tier).toBe("hot");
      expect(svc.probes.counts.checks).toBe(0);
      await expectProbeMismatch(svc.graft(m.sha256, QUERY, { maxTokens: 4, verifyProbe: true }));
      expect(svc.list()).toEqual([]);
      expect(quarantined(dataDir)).toEqual([`${m.sha256}.json`, `${m.sha256}.state`]);
      expect(svc.snapshot().hot).toEqual([]);
      expect(engine.slots.map((s) => s.nextTokenIndex)).toEqual([0, 0]);
    } finally {
      await svc.close();
    }
  });

  it("a gate counts entries and checks only what it must", () => {
    const gate = new ProbeGate(1024, async () => undefined);
    expect(gate.needed("a", "cold", false)).toBe(true);
    expect(gate.needed("a", "warm", false)).toBe(true);
    expect(gate.needed("a", "hot", false)).toBe(false);
    expect(gate.needed("a", "hot", true)).toBe(true);
    gate.markChecked("a");
    expect(gate.needed("a", "cold", false)).toBe(false);
    expect(gate.needed("a", "cold", true)).toBe(true);
    expect(gate.fewestEntries).toBeNull();
  });
});
