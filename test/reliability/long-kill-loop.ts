/**
 * The long kill loop (issue 9): `kvgraft serve gpu` on a generated tiny model is SIGKILLed at
 * random moments while depositing a large block over HTTP, at least 100 times; after each
 * restart every acknowledged block is listed, every listed block verifies over HTTP, nothing
 * half-written is listed and tmp/ was swept. CI runs 5 iterations of the same loop
 * (test/reliability/kill-gpu-node.test.ts).
 *
 * Usage: node --import tsx test/reliability/long-kill-loop.ts [--iterations 100] [--seed N] [--data-dir DIR] [--json]
 * Exit status 0 when no iteration failed, 1 otherwise.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { syntheticModel } from "../helpers/models.js";
import { runKillLoop } from "./kill-loop.js";

const { values } = parseArgs({
  options: {
    iterations: { type: "string", default: "100" },
    seed: { type: "string" },
    "data-dir": { type: "string" },
    json: { type: "boolean", default: false },
  },
});
const iterations = Number(values.iterations);
if (!Number.isInteger(iterations) || iterations < 1)
  throw new Error("--iterations must be a positive integer");
const seed = values.seed !== undefined ? Number(values.seed) : Date.now() % 1_000_000;
const dataDir = values["data-dir"] ?? mkdtempSync(join(tmpdir(), "kvgraft-kill-loop-"));
const report = await runKillLoop({
  modelPath: syntheticModel("tiny-llama"),
  dataDir,
  secret: "kill-loop-secret-0123456789",
  iterations,
  seed,
  log: (line) => process.stderr.write(`${line}\n`),
});
if (values.json) process.stdout.write(`${JSON.stringify(report)}\n`);
else {
  process.stdout.write(
    `kill loop: ${report.iterations} kills (seed ${report.seed}) in ${Math.round(report.ms / 1000)} s; ` +
      `${report.acknowledged} acknowledged blocks kept, ${report.listedAtEnd} listed, ${report.verified} verifications ok, ` +
      `${report.killsWithLeftovers} kills left temp/orphan files (recovered), ${report.killsAfterAnswer} after the answer; ` +
      `${report.failures.length} failures\n`,
  );
  for (const f of report.failures) process.stdout.write(`FAIL ${f}\n`);
}
if (!values["data-dir"]) rmSync(dataDir, { recursive: true, force: true });
process.exitCode = report.failures.length === 0 ? 0 : 1;
