/**
 * Writes a synthetic router library (tools/router-library.ts) as JSONL.
 * Usage: npx tsx scripts/gen-router-library.ts [--problems 10000] [--seed 1] > library.jsonl
 */
import { intFlag, parseFlags } from "../cli/args.js";
import { generateRouterLibrary } from "../tools/router-library.js";

const flags = parseFlags(process.argv.slice(2), { problems: { type: "string" }, seed: { type: "string" } });
const entries = generateRouterLibrary(
  intFlag(flags.problems, "problems", 10_000),
  intFlag(flags.seed, "seed", 1),
);
for (const e of entries) process.stdout.write(`${JSON.stringify(e)}\n`);
