/**
 * Content-addressed block files on disk. A block is `<sha256>.state` (the llama.cpp sequence
 * state) plus `<sha256>.json` (its manifest), written atomically (temp file, fsync, rename,
 * fsync of the directory), the manifest after the state. Every read is hash-checked first; a
 * file whose bytes do not match its name is moved to `quarantine/`.
 */
import { mkdir, open, readdir, readFile, rename, rm, stat, utimes } from "node:fs/promises";
import { join } from "node:path";
import { type BlockManifest, blockManifestSchema, type TierBytes } from "../../../shared/protocol.js";
import { conflict, notFound } from "../../errors.js";
import { HASH_CHUNK_BYTES, hashFileWithChunks, sha256File, verifyFileChunks } from "./file-hash.js";

export { sha256File };

async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes a small file atomically: temp, fsync, rename, fsync the directory. */
async function writeFileAtomic(dir: string, tmpDir: string, name: string, data: string): Promise<void> {
  const temp = join(tmpDir, `${name}.${process.pid}.${Date.now()}.tmp`);
  const handle = await open(temp, "w", 0o644);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, join(dir, name));
  await fsyncPath(dir);
}

/** What start-up found and did. */
export interface StoreRecovery {
  sweptTempFiles: number;
  quarantined: string[];
  manifestsWithoutFiles: string[];
}

/** The on-disk block store. */
export class BlockStore {
  private readonly manifests = new Map<string, BlockManifest>();
  /** When `touch` last wrote each block's mtime (ms since the epoch). */
  private readonly touched = new Map<string, number>();
  readonly blocksDir: string;
  readonly tmpDir: string;
  readonly quarantineDir: string;

  private constructor(readonly root: string) {
    this.blocksDir = join(root, "blocks");
    this.tmpDir = join(root, "tmp");
    this.quarantineDir = join(root, "quarantine");
  }

  /**
   * Opens (creating) the store and recovers from any crash: temp files are swept, a state file
   * without a manifest (a deposit cut short) is quarantined, a manifest without its state file
   * is reported and set aside.
   */
  static async open(root: string): Promise<{ store: BlockStore; recovery: StoreRecovery }> {
    const store = new BlockStore(root);
    await Promise.all(
      [store.blocksDir, store.tmpDir, store.quarantineDir].map((d) => mkdir(d, { recursive: true })),
    );
    const recovery: StoreRecovery = { sweptTempFiles: 0, quarantined: [], manifestsWithoutFiles: [] };
    for (const name of await readdir(store.tmpDir)) {
      await rm(join(store.tmpDir, name), { recursive: true, force: true });
      recovery.sweptTempFiles++;
    }
    const names = new Set(await readdir(store.blocksDir));
    for (const name of names) {
      const match = /^([0-9a-f]{64})\.(state|json)$/.exec(name);
      if (!match) {
        await store.quarantine(name, "unknown file");
        recovery.quarantined.push(name);
        continue;
      }
      const [, sha, kind] = match as unknown as [string, string, string];
      if (kind === "state" && !names.has(`${sha}.json`)) {
        await store.quarantine(name, "state without manifest");
        recovery.quarantined.push(name);
      } else if (kind === "json") {
        if (!names.has(`${sha}.state`)) {
          recovery.manifestsWithoutFiles.push(sha);
          await store.quarantine(name, "manifest without state");
          continue;
        }
        // A manifest that is not even JSON (torn, damaged) is invalid too, not fatal to start-up.
        const parsed = blockManifestSchema.safeParse(
          await readFile(join(store.blocksDir, name), "utf8")
            .then(JSON.parse)
            .catch(() => undefined),
        );
        if (!parsed.success || parsed.data.sha256 !== sha) {
          await store.quarantine(name, "invalid manifest");
          await store.quarantine(`${sha}.state`, "invalid manifest");
          recovery.quarantined.push(name);
          continue;
        }
        store.manifests.set(sha, parsed.data);
      }
    }
    return { store, recovery };
  }

  /** A fresh path for a temp file inside the store (same filesystem as the blocks, for rename). */
  tempPath(label: string): string {
    return join(
      this.tmpDir,
      `${label}.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}.tmp`,
    );
  }

  /** All manifests, oldest first. */
  list(): BlockManifest[] {
    return [...this.manifests.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  has(sha: string): boolean {
    return this.manifests.has(sha);
  }

  /** The manifest of a block; 404 `block_not_found` when absent. */
  get(sha: string): BlockManifest {
    const m = this.manifests.get(sha);
    if (!m) throw notFound("block_not_found", `no block ${sha}`);
    return m;
  }

  /**
   * Records a use of the block in its state file's modification time, so the most-recently-used
   * order (warm start's) survives restarts; at most once a second per block.
   */
  touch(sha: string): void {
    const now = Date.now();
    if (now - (this.touched.get(sha) ?? 0) < 1000) return;
    this.touched.set(sha, now);
    const time = new Date(now);
    void utimes(this.statePath(sha), time, time).catch(() => undefined);
  }

  /** Stored blocks, most recently used first: by state file mtime (written, or `touch`ed by a restore). */
  async byRecentUse(): Promise<BlockManifest[]> {
    const timed = await Promise.all(
      this.list().map(async (m) => ({
        m,
        mtime: await stat(this.statePath(m.sha256)).then(
          (s) => s.mtimeMs,
          () => 0,
        ),
      })),
    );
    return timed.sort((a, b) => b.mtime - a.mtime).map((t) => t.m);
  }

  statePath(sha: string): string {
    return join(this.blocksDir, `${sha}.state`);
  }

  /**
   * Moves a fully written temp state file into the store under its SHA-256 and writes the
   * manifest after it. Idempotent: the same bytes give the same block. `hashed` is the file's
   * hash when the caller has just computed it (an import checks it first), so it is read once.
   */
  async commit(
    tempStatePath: string,
    manifest: Omit<BlockManifest, "sha256" | "sizeBytes">,
    hashed?: { sha256: string; chunks: string[] },
  ): Promise<BlockManifest> {
    const { sha256: sha, chunks } = hashed ?? (await hashFileWithChunks(tempStatePath));
    const existing = this.manifests.get(sha);
    if (existing) {
      await rm(tempStatePath, { force: true });
      return existing;
    }
    const { size } = await stat(tempStatePath);
    const full = blockManifestSchema.parse({
      ...manifest,
      sha256: sha,
      sizeBytes: size,
      chunks: { bytes: HASH_CHUNK_BYTES, sha256: chunks },
    });
    await this.place(tempStatePath, full);
    return full;
  }

  /**
   * Adds a block whose state file the caller has already checked against `manifest` (a fetch
   * from the bucket checks every range and the whole file before this), under the manifest's own hash.
   */
  async adopt(tempStatePath: string, manifest: BlockManifest): Promise<BlockManifest> {
    const existing = this.manifests.get(manifest.sha256);
    if (existing) {
      await rm(tempStatePath, { force: true });
      return existing;
    }
    await this.place(tempStatePath, manifest);
    return manifest;
  }

  /** Moves the state file into place, then writes the manifest (the block exists from then on). */
  private async place(tempStatePath: string, manifest: BlockManifest): Promise<void> {
    const sha = manifest.sha256;
    await fsyncPath(tempStatePath);
    await rename(tempStatePath, this.statePath(sha));
    await fsyncPath(this.blocksDir);
    await writeFileAtomic(
      this.blocksDir,
      this.tmpDir,
      `${sha}.json`,
      `${JSON.stringify(manifest, null, 2)}\n`,
    );
    this.manifests.set(sha, manifest);
  }

  /**
   * Hash-checks the block's state file and returns its path; on a mismatch (flipped byte,
   * truncation) the block is quarantined and a 409 `block_corrupt` is thrown.
   */
  async checkedStatePath(sha: string): Promise<string> {
    const manifest = this.get(sha);
    const path = this.statePath(sha);
    if (!(await this.matches(path, manifest))) {
      await this.quarantineBlock(sha);
      throw conflict("block_corrupt", `block ${sha} failed its hash check and was quarantined`);
    }
    return path;
  }

  /** Whether the file's bytes are the block's: per-chunk hashes in parallel when recorded. */
  private async matches(path: string, manifest: BlockManifest): Promise<boolean> {
    try {
      const { size } = await stat(path);
      if (size !== manifest.sizeBytes) return false;
      if (manifest.chunks)
        return await verifyFileChunks(path, size, manifest.chunks.sha256, manifest.chunks.bytes);
      return (await sha256File(path)) === manifest.sha256;
    } catch {
      return false;
    }
  }

  /** Moves a block's files to quarantine and forgets it. */
  async quarantineBlock(sha: string): Promise<void> {
    this.manifests.delete(sha);
    await this.quarantine(`${sha}.json`, "quarantined block");
    await this.quarantine(`${sha}.state`, "quarantined block");
  }

  /** Deletes a block (manifest first, so a crash never leaves a listed block without its file). */
  async delete(sha: string): Promise<void> {
    this.get(sha);
    this.manifests.delete(sha);
    await rm(join(this.blocksDir, `${sha}.json`), { force: true });
    await rm(this.statePath(sha), { force: true });
    await fsyncPath(this.blocksDir);
  }

  /**
   * Bytes of block state per tier, from the manifests: the blocks in slots (one entry per slot, so
   * a block in two slots counts twice), the warm tier's blocks, and every block stored here.
   */
  tierBytes(inSlots: readonly string[], warm: readonly string[]): TierBytes {
    const sizeOf = (ids: readonly string[]) =>
      ids.reduce((total, id) => total + (this.manifests.get(id)?.sizeBytes ?? 0), 0);
    return { hot: sizeOf(inSlots), warm: sizeOf(warm), cold: this.diskUsage() };
  }

  /** Bytes used by block state files. */
  diskUsage(): number {
    let total = 0;
    for (const m of this.manifests.values()) total += m.sizeBytes;
    return total;
  }

  private async quarantine(name: string, _reason: string): Promise<void> {
    const from = join(this.blocksDir, name);
    await rename(from, join(this.quarantineDir, `${name}.${Date.now()}`)).catch(
      (err: NodeJS.ErrnoException) => {
        if (err.code !== "ENOENT") throw err;
      },
    );
  }
}
