/**
 * The service-level kill loop, shared by test/reliability/kill-gpu-node.test.ts (a bounded run in
 * CI) and scripts/kill-loop.ts (>= 100 iterations): `kvgraft serve gpu` deposits a large block
 * over HTTP and is SIGKILLed at a random moment (or just as a state file lands in blocks/); after
 * each restart, over HTTP only: every block acknowledged before a kill is listed, every listed
 * block verifies (`POST /v1/blocks/:id/verify`), nothing in blocks/ is unlisted (no half-written
 * block) and tmp/ was swept.
 */
import { existsSync, watch } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { GpuError } from "../../shared/gpu-client.js";
import { seededRng } from "../../shared/random.js";
import { type GpuChild, killHard, startGpuChild } from "./helpers.js";

export interface KillLoopOptions {
  modelPath: string;
  dataDir: string;
  secret: string;
  iterations: number;
  seed: number;
  /** Words of each deposited text (~7 tokens each); 120 is ~850 tokens, ~0.9 MB of state. */
  words?: number;
  log?: (line: string) => void;
}

export interface KillLoopReport {
  iterations: number;
  seed: number;
  acknowledged: number;
  listedAtEnd: number;
  verified: number;
  /** Kills that left a temp file or a state file without manifest (recovery had work to do). */
  killsWithLeftovers: number;
  /** Kills that landed after the deposit was answered (the block must survive). */
  killsAfterAnswer: number;
  failures: string[];
  ms: number;
}

export function largeText(label: string, words: number): string {
  return `${label}: ${Array.from({ length: words }, (_, k) => `w${k} b`).join(" ")}`;
}

/** Resolves when a `.state` file appears in `dir` (or after `maxMs`). */
function stateFileLands(dir: string, maxMs: number): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(dir, (_e, name) => {
      if (name?.endsWith(".state")) done();
    });
    const timer = setTimeout(done, maxMs);
    function done() {
      clearTimeout(timer);
      watcher.close();
      resolve();
    }
  });
}

export async function runKillLoop(o: KillLoopOptions): Promise<KillLoopReport> {
  const log = o.log ?? (() => undefined);
  // Seeded, so a failing run can be replayed by its seed.
  const random = seededRng(`kill-loop/${o.seed}`).next;
  const words = o.words ?? 120;
  const acknowledged = new Set<string>();
  const failures: string[] = [];
  const t0 = Date.now();
  let depositMs = 1_500;
  let killsWithLeftovers = 0;
  let killsAfterAnswer = 0;
  let verified = 0;
  let listedAtEnd = 0;
  const start = () => startGpuChild({ modelPath: o.modelPath, dataDir: o.dataDir, secret: o.secret });
  let node: GpuChild = await start();
  try {
    for (let i = 0; i <= o.iterations; i++) {
      // 1. Check the store as the restarted node serves it.
      const listed = await node.client.listBlocks();
      const ids = new Set(listed.map((m) => m.sha256));
      const ctx = `iteration ${i} (seed ${o.seed})`;
      for (const sha of acknowledged)
        if (!ids.has(sha)) failures.push(`${ctx}: acknowledged block ${sha} is not listed`);
      const files = await readdir(join(o.dataDir, "blocks"));
      const expected = listed.flatMap((m) => [`${m.sha256}.json`, `${m.sha256}.state`]);
      const unlisted = files.filter((f) => !expected.includes(f));
      const missing = expected.filter((f) => !files.includes(f));
      if (unlisted.length || missing.length)
        failures.push(`${ctx}: blocks/ unlisted ${unlisted.join(",")} missing ${missing.join(",")}`);
      const tmp = await readdir(join(o.dataDir, "tmp"));
      if (tmp.length) failures.push(`${ctx}: tmp/ not swept: ${tmp.join(",")}`);
      // Verify every listed block in the long run; the newest three in short ones (cost grows).
      const toVerify = o.iterations >= 20 && i < o.iterations ? listed.slice(-3) : listed;
      for (const m of toVerify) {
        try {
          const check = await node.client.verifyBlock(m.sha256);
          if (!check.ok) failures.push(`${ctx}: block ${m.sha256} failed verification`);
          else verified++;
        } catch (err) {
          failures.push(`${ctx}: verify ${m.sha256}: ${(err as Error).message}`);
        }
      }
      if (i === o.iterations) {
        listedAtEnd = listed.length;
        break;
      }

      // 2. Deposit a large block and kill the node at a random moment of it.
      const atStateFile = i % 4 === 3;
      const text = largeText(`s${o.seed}i${i}`, words);
      const began = performance.now();
      let answered: string | null = null;
      const deposit = node.client.deposit(text).then(
        (m) => {
          answered = m.sha256;
          depositMs = performance.now() - began;
        },
        (err: unknown) => {
          if (err instanceof GpuError) failures.push(`${ctx}: deposit refused: ${err.code} ${err.message}`);
        },
      );
      let how: string;
      if (atStateFile) {
        await stateFileLands(join(o.dataDir, "blocks"), 10_000);
        how = "as a state file landed in blocks/";
      } else {
        // Up to 3x the last deposit: the first deposit after a restart is slower than the last one timed.
        const delay = Math.floor(random() * depositMs * 3);
        await new Promise((r) => setTimeout(r, delay));
        how = `${delay} ms into a deposit (last took ${Math.round(depositMs)} ms)`;
      }
      const killedPid = node.child.pid;
      await killHard(node);
      await deposit;
      if (answered) {
        acknowledged.add(answered);
        killsAfterAnswer++;
      }
      const left = (await readdir(join(o.dataDir, "tmp"))).length;
      const names = await readdir(join(o.dataDir, "blocks"));
      const orphans = names.filter(
        (n) => n.endsWith(".state") && !names.includes(n.replace(/\.state$/, ".json")),
      );
      if (left + orphans.length > 0) killsWithLeftovers++;
      log(
        `${ctx}: killed ${how}; tmp ${left}, orphan states ${orphans.length}, answered ${answered !== null}`,
      );

      // 3. Restart on the same data directory; the dead node's RAM (warm-tier) folder is swept.
      node = await start();
      if (existsSync(`/dev/shm/kvgraft-warm-${killedPid}`))
        failures.push(`${ctx}: /dev/shm/kvgraft-warm-${killedPid} of the killed node is still there`);
    }
  } finally {
    await killHard(node);
  }
  return {
    iterations: o.iterations,
    seed: o.seed,
    acknowledged: acknowledged.size,
    listedAtEnd,
    verified,
    killsWithLeftovers,
    killsAfterAnswer,
    failures,
    ms: Date.now() - t0,
  };
}
