/**
 * Atomic writes under `kill -9`: a child process deposits blocks in a loop and is killed with
 * SIGKILL at random moments; after each kill the store must reopen with every listed block whole
 * and every leftover accounted for, and at the end every block must still restore exactly.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, watch } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, expect, it } from "vitest";
import { BlockService } from "../gpu-node/blocks/block-service.js";
import { BlockStore } from "../gpu-node/blocks/store/block-store.js";
import { Engine } from "../gpu-node/engine/engine.js";
import { blockManifestSchema } from "../shared/protocol.js";
import { Xoshiro128 } from "../shared/random.js";
import { syntheticModel } from "./helpers/models.js";

const ROOT = join(import.meta.dirname, "..");
const CHILD = join(import.meta.dirname, "helpers", "deposit-child.ts");
const ITERATIONS = 6;
const SLOTS = 2;
const CONTEXT = 1024;
const SEED = process.env.KVGRAFT_CRASH_SEED ?? "crash-1";

const live = new Set<ChildProcess>();
const temp = mkdtempSync(join(tmpdir(), "kvgraft-crash-"));
afterAll(() => {
  for (const child of live) child.kill("SIGKILL");
  rmSync(temp, { recursive: true, force: true });
});

interface RunningChild {
  child: ChildProcess;
  committed: string[];
  /** Resolves once `n` blocks are committed (or the child is gone). */
  commits: (n: number) => Promise<void>;
  ready: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

function startChild(options: Record<string, unknown>): RunningChild {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, JSON.stringify(options)], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "pipe"],
  });
  live.add(child);
  const committed: string[] = [];
  const waiting: { n: number; resolve: () => void }[] = [];
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );
  let outputDone: () => void = () => undefined;
  const outputClosed = new Promise<void>((resolve) => {
    outputDone = resolve;
  });
  const ready = new Promise<void>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => {
      if (line.startsWith("ready")) resolve();
      const m = /^committed ([0-9a-f]{64}) \d+$/.exec(line);
      if (m) committed.push(m[1] as string);
      for (const w of waiting) if (committed.length >= w.n) w.resolve();
    });
    lines.on("close", () => {
      for (const w of waiting) w.resolve();
      outputDone();
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`child exited (${code ?? signal}) before ready: ${stderr}`)),
    );
  });
  return {
    child,
    committed,
    commits: (n) =>
      committed.length >= n ? Promise.resolve() : new Promise((resolve) => waiting.push({ n, resolve })),
    ready,
    // Exit and every line printed before it.
    exited: Promise.all([exited, outputClosed]).then(([e]) => e),
    stderr: () => stderr,
  };
}

/** Resolves at the `nth` change in `dir` whose file name passes `match` (or when the child exits). */
function untilWatched(
  dir: string,
  nth: number,
  match: (name: string) => boolean,
  run: RunningChild,
): Promise<void> {
  return new Promise<void>((resolve) => {
    let seen = 0;
    const watcher = watch(dir, (_event, name) => {
      if (!name || !match(name) || ++seen < nth) return;
      watcher.close();
      resolve();
    });
    void run.exited.then(() => {
      watcher.close();
      resolve();
    });
  });
}

it(`keeps the store whole across ${ITERATIONS} SIGKILLs during deposits, then verifies every block`, async () => {
  const modelPath = syntheticModel("tiny-llama");
  const dataDir = join(temp, "data");
  const rng = new Xoshiro128(SEED);
  const everCommitted = new Set<string>();
  let leftovers = 0;

  for (let i = 0; i < ITERATIONS; i++) {
    const run = startChild({
      modelPath,
      dataDir,
      warmDir: join(temp, `warm-${i}`),
      label: `run${i}`,
      slots: SLOTS,
      contextSize: CONTEXT,
      phrases: 20,
    });
    await run.ready;
    let how: string;
    if (i % 3 === 0) {
      // At a random moment: let the first (warming-up) deposit finish, time the next one, then
      // kill at a random point of the one after (prefill, save, verify in another slot, commit).
      await run.commits(1);
      const since = performance.now();
      await run.commits(2);
      const depositMs = performance.now() - since;
      const delayMs = rng.next() % Math.max(1, Math.ceil(depositMs));
      await new Promise((r) => setTimeout(r, delayMs));
      how = `${delayMs} ms after commit 2 (a deposit took ${Math.round(depositMs)} ms)`;
    } else if (i % 3 === 1) {
      // Inside a write: at the n-th create/rename in tmp/ (state temp, manifest temp, renames).
      const nth = 1 + (rng.next() % 8);
      await untilWatched(join(dataDir, "tmp"), nth, () => true, run);
      how = `at tmp/ event ${nth}`;
    } else {
      // Between the state file's rename into blocks/ and its manifest's.
      await untilWatched(join(dataDir, "blocks"), 1, (name) => name.endsWith(".state"), run);
      how = "when a state file appeared in blocks/";
    }
    run.child.kill("SIGKILL");
    const exit = await run.exited;
    expect(exit.signal, `iteration ${i} (seed ${SEED}): ${run.stderr()}`).toBe("SIGKILL");
    for (const sha of run.committed) everCommitted.add(sha);

    // What the kill left behind, before anything touches it.
    const tmpLeft = readdirSync(join(dataDir, "tmp"));
    const names = new Set(readdirSync(join(dataDir, "blocks")));
    const statesWithoutManifest = [...names].filter(
      (n) => n.endsWith(".state") && !names.has(n.replace(/\.state$/, ".json")),
    );
    const manifestsWithoutState = [...names].filter(
      (n) => n.endsWith(".json") && !names.has(n.replace(/\.json$/, ".state")),
    );
    leftovers += tmpLeft.length + statesWithoutManifest.length;

    const { store, recovery } = await BlockStore.open(dataDir);
    const context = `iteration ${i}, seed ${SEED}, killed ${how}, ${run.committed.length} committed`;
    expect(recovery.sweptTempFiles, context).toBe(tmpLeft.length);
    expect([...recovery.quarantined].sort(), context).toEqual(statesWithoutManifest.sort());
    // The manifest is written after the state, so a kill never leaves a manifest alone.
    expect(manifestsWithoutState, context).toEqual([]);
    expect(recovery.manifestsWithoutFiles, context).toEqual([]);
    expect(readdirSync(join(dataDir, "tmp")), context).toEqual([]);

    // No partial block: every listed block is whole, every file in blocks/ belongs to one.
    const listed = store.list();
    const after = readdirSync(join(dataDir, "blocks")).sort();
    expect(after, context).toEqual(listed.flatMap((m) => [`${m.sha256}.json`, `${m.sha256}.state`]).sort());
    for (const m of listed) {
      const path = await store.checkedStatePath(m.sha256);
      expect(statSync(path).size).toBe(m.sizeBytes);
      const onDisk = blockManifestSchema.parse(
        JSON.parse(readFileSync(join(dataDir, "blocks", `${m.sha256}.json`), "utf8")),
      );
      expect(onDisk).toEqual(m);
    }
    // Whatever the child reported as committed survived the kill.
    const listedIds = new Set(listed.map((m) => m.sha256));
    for (const sha of everCommitted)
      expect(listedIds.has(sha), `${sha} was committed (${context})`).toBe(true);
  }

  // Each random-moment run committed 2 blocks before its kill.
  expect(everCommitted.size).toBeGreaterThanOrEqual((2 * ITERATIONS) / 3);
  // The kills landed inside writes at least once, so recovery had work to do.
  expect(leftovers).toBeGreaterThan(0);

  // Every surviving block restores and reproduces its probe hash.
  const engine = await Engine.open({ modelPath, slots: SLOTS, contextSize: CONTEXT });
  const service = await BlockService.open({
    engine,
    dataDir,
    warmDir: join(temp, "warm-final"),
    warmBudgetBytes: 0,
  });
  try {
    expect(service.recovery).toEqual({ sweptTempFiles: 0, quarantined: [], manifestsWithoutFiles: [] });
    const blocks = service.list();
    expect(blocks.length).toBeGreaterThanOrEqual(everCommitted.size);
    for (const m of blocks) {
      const check = await service.verify(m.sha256);
      expect(check.ok, m.sha256).toBe(true);
    }
  } finally {
    await service.close();
    await engine.dispose();
  }
});
