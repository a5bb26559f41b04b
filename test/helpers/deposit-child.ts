/**
 * A child process for the crash tests: opens an Engine and a BlockService on a data dir and
 * deposits distinct texts in a loop, printing `ready` once open and `committed <sha256> <i>`
 * after each block is committed, until it is killed (or its stdin closes, or `count` is reached).
 *
 * Usage: node --import tsx test/helpers/deposit-child.ts '<json options>'
 *   { modelPath, dataDir, warmDir, label, slots?, contextSize?, phrases?, count? }
 * It is a script (it runs on import), so tests spawn it rather than import it.
 */

import { BlockService } from "../../gpu-node/blocks/block-service.js";
import { Engine } from "../../gpu-node/engine/engine.js";

interface DepositChildOptions {
  modelPath: string;
  dataDir: string;
  /** Warm-tier folder (kept out of /dev/shm so a killed child leaks nothing there). */
  warmDir: string;
  /** Makes this run's texts distinct from other runs'. */
  label: string;
  slots?: number;
  contextSize?: number;
  /** Phrases per text (~11 tokens each). */
  phrases?: number;
  /** Deposits before exiting normally. */
  count?: number;
}

/** The i-th text of a run: distinct per (label, i), a few hundred tokens long. */
function depositText(label: string, i: number, phrases: number): string {
  return Array.from({ length: phrases }, (_, k) => `${label} item${i} word${k} alpha beta`).join(" ");
}

const options = JSON.parse(process.argv[2] ?? "{}") as DepositChildOptions;
// The parent's end of stdin closing means the parent is gone: stop instead of looping on.
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();

const engine = await Engine.open({
  modelPath: options.modelPath,
  slots: options.slots ?? 2,
  contextSize: options.contextSize ?? 1024,
});
const service = await BlockService.open({
  engine,
  dataDir: options.dataDir,
  warmDir: options.warmDir,
  warmBudgetBytes: 0,
});
process.stdout.write(`ready ${JSON.stringify(service.recovery)}\n`);
const count = options.count ?? 1000;
for (let i = 0; i < count; i++) {
  const manifest = await service.deposit(depositText(options.label, i, options.phrases ?? 30));
  process.stdout.write(`committed ${manifest.sha256} ${i}\n`);
}
await service.close();
await engine.dispose();
process.exit(0);
