/**
 * The on-disk block store on real files: atomic commit, hash-checked reads, quarantine of
 * corrupt or truncated files, and crash recovery at open.
 */

import { createHash, randomBytes } from "node:crypto";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BlockStore, sha256File } from "../gpu-node/blocks/store/block-store.js";
import { manifestFields } from "../shared/block-manifest.js";
import { DomainError } from "../shared/errors.js";
import { type BlockManifest, blockManifestSchema } from "../shared/protocol.js";
import { madeUpOrigin } from "./helpers/block-files.js";

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function freshRoot(): string {
  const root = mkdtempSync(join(tmpdir(), "kvgraft-store-"));
  roots.push(root);
  return root;
}

const sha = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

/** Writes `bytes` as a temp state file in the store and commits it. */
async function commitBytes(store: BlockStore, bytes: Buffer, label = "x"): Promise<BlockManifest> {
  const temp = store.tempPath("test");
  await writeFile(temp, bytes);
  return store.commit(temp, manifestFields(madeUpOrigin(label)));
}

async function expectDomainError(
  promise: Promise<unknown>,
  status: number,
  code: string,
): Promise<DomainError> {
  const err = await promise.then(
    () => {
      throw new Error(`expected a ${status} ${code}, got success`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DomainError);
  expect((err as DomainError).code).toBe(code);
  expect((err as DomainError).status).toBe(status);
  return err as DomainError;
}

/** Names in the quarantine folder with the quarantine suffix (`.<ms>`) removed. */
function quarantined(store: BlockStore): string[] {
  return readdirSync(store.quarantineDir)
    .map((n) => n.replace(/\.\d+$/, ""))
    .sort();
}

describe("BlockStore", () => {
  it("commits a temp file under its SHA-256 with a manifest, durably and idempotently", async () => {
    const root = freshRoot();
    const { store, recovery } = await BlockStore.open(root);
    expect(recovery).toEqual({ sweptTempFiles: 0, quarantined: [], manifestsWithoutFiles: [] });
    const bytes = randomBytes(4096 + 17);
    const temp = store.tempPath("test");
    await writeFile(temp, bytes);
    const m = await store.commit(temp, manifestFields(madeUpOrigin("a")));

    expect(m.sha256).toBe(sha(bytes));
    expect(m.sizeBytes).toBe(bytes.length);
    expect(existsSync(temp)).toBe(false);
    expect(readdirSync(store.tmpDir)).toEqual([]);
    expect(readFileSync(store.statePath(m.sha256)).equals(bytes)).toBe(true);
    const onDisk = blockManifestSchema.parse(
      JSON.parse(readFileSync(join(store.blocksDir, `${m.sha256}.json`), "utf8")),
    );
    expect(onDisk).toEqual(m);
    expect(store.has(m.sha256)).toBe(true);
    expect(store.get(m.sha256)).toEqual(m);
    expect(store.list()).toEqual([m]);
    expect(store.diskUsage()).toBe(bytes.length);

    // The same bytes again: the same block, the second temp file removed, one entry.
    const again = await commitBytes(store, bytes, "b");
    expect(again).toEqual(m);
    expect(store.list()).toHaveLength(1);
    expect(readdirSync(store.tmpDir)).toEqual([]);

    // A second store on the same root sees exactly what was committed.
    const reopened = await BlockStore.open(root);
    expect(reopened.recovery).toEqual({ sweptTempFiles: 0, quarantined: [], manifestsWithoutFiles: [] });
    expect(reopened.store.list()).toEqual([m]);
    expect(await sha256File(await reopened.store.checkedStatePath(m.sha256))).toBe(m.sha256);
  });

  it("lists blocks oldest first and deletes them (both files), 404 for unknown ids", async () => {
    const { store } = await BlockStore.open(freshRoot());
    const a = await commitBytes(store, randomBytes(100), "a");
    await new Promise((r) => setTimeout(r, 5));
    const b = await commitBytes(store, randomBytes(200), "b");
    expect(store.list().map((m) => m.sha256)).toEqual([a.sha256, b.sha256]);
    expect(store.diskUsage()).toBe(300);

    await store.delete(a.sha256);
    expect(store.list().map((m) => m.sha256)).toEqual([b.sha256]);
    expect(readdirSync(store.blocksDir).sort()).toEqual([`${b.sha256}.json`, `${b.sha256}.state`]);
    expect(store.diskUsage()).toBe(200);
    expect(() => store.get(a.sha256)).toThrow(DomainError);
    await expectDomainError(store.delete(a.sha256), 404, "block_not_found");
    await expectDomainError(store.checkedStatePath(a.sha256), 404, "block_not_found");
  });

  it.each([
    [
      "one flipped byte",
      true,
      (path: string) => {
        const bytes = readFileSync(path);
        const at = Math.floor(bytes.length / 2);
        bytes[at] = (bytes[at] ?? 0) ^ 0x01;
        writeFileSync(path, bytes);
      },
    ],
    ["a truncated file", true, (path: string) => truncateSync(path, 1000)],
    ["a missing file", false, (path: string) => rmSync(path)],
  ] as const)(
    "quarantines a block whose state file has %s: 409 block_corrupt, no longer listed",
    async (_, stateLeft, damage) => {
      const root = freshRoot();
      const { store } = await BlockStore.open(root);
      const good = await commitBytes(store, randomBytes(2048), "good");
      const bad = await commitBytes(store, randomBytes(2048), "bad");
      damage(store.statePath(bad.sha256));

      const err = await expectDomainError(store.checkedStatePath(bad.sha256), 409, "block_corrupt");
      expect(err.details?.actual).not.toBe(bad.sha256);
      expect(store.has(bad.sha256)).toBe(false);
      expect(store.list().map((m) => m.sha256)).toEqual([good.sha256]);
      expect(readdirSync(store.blocksDir).sort()).toEqual([`${good.sha256}.json`, `${good.sha256}.state`]);
      // Both files are set aside (a missing state file has nothing to move).
      expect(quarantined(store)).toEqual(
        stateLeft ? [`${bad.sha256}.json`, `${bad.sha256}.state`] : [`${bad.sha256}.json`],
      );
      await expectDomainError(store.checkedStatePath(bad.sha256), 404, "block_not_found");
      // The intact block is unaffected, and a restart does not bring the bad one back.
      expect(await store.checkedStatePath(good.sha256)).toBe(store.statePath(good.sha256));
      const reopened = await BlockStore.open(root);
      expect(reopened.store.list().map((m) => m.sha256)).toEqual([good.sha256]);
    },
  );

  it("keeps the damaged bytes themselves in quarantine", async () => {
    const { store } = await BlockStore.open(freshRoot());
    const m = await commitBytes(store, randomBytes(4096), "q");
    const damaged = readFileSync(store.statePath(m.sha256));
    damaged[0] = (damaged[0] ?? 0) ^ 0xff;
    writeFileSync(store.statePath(m.sha256), damaged);
    await expectDomainError(store.checkedStatePath(m.sha256), 409, "block_corrupt");
    const stateCopy = readdirSync(store.quarantineDir).find((n) => n.startsWith(`${m.sha256}.state.`));
    expect(stateCopy).toBeDefined();
    expect(readFileSync(join(store.quarantineDir, stateCopy as string)).equals(damaged)).toBe(true);
  });

  it("recovers at open: sweeps temp files, quarantines orphans and bad manifests, sets aside manifests without files", async () => {
    const root = freshRoot();
    const { store: first } = await BlockStore.open(root);
    const kept = await commitBytes(first, randomBytes(512), "kept");
    const orphanState = await commitBytes(first, randomBytes(512), "orphan-state");
    const orphanManifest = await commitBytes(first, randomBytes(512), "orphan-manifest");
    const badManifest = await commitBytes(first, randomBytes(512), "bad-manifest");
    const misnamed = await commitBytes(first, randomBytes(512), "misnamed");
    const blocks = first.blocksDir;
    // A deposit cut short after the state's rename, before the manifest's.
    rmSync(join(blocks, `${orphanState.sha256}.json`));
    // A state file lost underneath its manifest.
    rmSync(join(blocks, `${orphanManifest.sha256}.state`));
    // A manifest that parses as JSON but not as a manifest.
    writeFileSync(join(blocks, `${badManifest.sha256}.json`), JSON.stringify({ formatVersion: 999 }));
    // A manifest that names another block.
    writeFileSync(
      join(blocks, `${misnamed.sha256}.json`),
      JSON.stringify({ ...misnamed, sha256: kept.sha256 }),
    );
    writeFileSync(join(blocks, "stray.bin"), "x");
    // Leftovers of writes cut short.
    writeFileSync(join(first.tmpDir, "deposit.1.2.abc.tmp"), randomBytes(64));
    writeFileSync(join(first.tmpDir, `${kept.sha256}.json.1.2.tmp`), "{");
    await mkdir(join(first.tmpDir, "partial-dir"));
    writeFileSync(join(first.tmpDir, "partial-dir", "f"), "y");

    const { store, recovery } = await BlockStore.open(root);
    expect(recovery.sweptTempFiles).toBe(3);
    expect(readdirSync(store.tmpDir)).toEqual([]);
    expect(recovery.manifestsWithoutFiles).toEqual([orphanManifest.sha256]);
    expect([...recovery.quarantined].sort()).toEqual(
      [
        `${orphanState.sha256}.state`,
        `${badManifest.sha256}.json`,
        `${misnamed.sha256}.json`,
        "stray.bin",
      ].sort(),
    );
    expect(quarantined(store)).toEqual(
      [
        `${orphanState.sha256}.state`,
        `${orphanManifest.sha256}.json`,
        `${badManifest.sha256}.json`,
        `${badManifest.sha256}.state`,
        `${misnamed.sha256}.json`,
        `${misnamed.sha256}.state`,
        "stray.bin",
      ].sort(),
    );
    expect(store.list()).toEqual([kept]);
    expect(readdirSync(store.blocksDir).sort()).toEqual([`${kept.sha256}.json`, `${kept.sha256}.state`]);

    // Recovery is complete: a second open finds nothing more to do.
    const again = await BlockStore.open(root);
    expect(again.recovery).toEqual({ sweptTempFiles: 0, quarantined: [], manifestsWithoutFiles: [] });
    expect(again.store.list()).toEqual([kept]);
  });

  it("quarantines a manifest that is not JSON at all (a torn or damaged file) instead of failing to open", async () => {
    const root = freshRoot();
    const { store: first } = await BlockStore.open(root);
    const kept = await commitBytes(first, randomBytes(256), "kept");
    const torn = await commitBytes(first, randomBytes(256), "torn");
    const text = readFileSync(join(first.blocksDir, `${torn.sha256}.json`), "utf8");
    writeFileSync(join(first.blocksDir, `${torn.sha256}.json`), text.slice(0, text.length / 2));

    const { store, recovery } = await BlockStore.open(root);
    expect(recovery.quarantined).toEqual([`${torn.sha256}.json`]);
    expect(store.list()).toEqual([kept]);
    expect(quarantined(store)).toEqual([`${torn.sha256}.json`, `${torn.sha256}.state`].sort());
  });
});
