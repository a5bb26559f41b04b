/**
 * A quick check of the families while writing them (a developer's tool; `test/families.test.ts`
 * is the check CI runs, through the product's sandbox): phrasings name every parameter once and no
 * other digits, PARAMS come out in the phrasing's order, and each Python program prints what
 * `answer` computes. Needs `python3` on PATH.
 *   node --import tsx tools/families/check.ts [familyIdPrefix] [--samples N]
 */
import { spawnSync } from "node:child_process";
import { answersEqual } from "../../shared/answers.js";
import { seededRng } from "../../shared/random.js";
import type { Family } from "./family.js";
import { FAMILIES } from "./index.js";
import { type Instance, instanceProblem, phrasingOrder, renderInstance } from "./render.js";

const args = process.argv.slice(2);
const samplesAt = args.indexOf("--samples");
const samples = samplesAt >= 0 ? Number(args[samplesAt + 1]) : 20;
const prefix = args.find((a, i) => !a.startsWith("--") && i !== samplesAt + 1) ?? "";

function structure(family: Family): string[] {
  const errors: string[] = [];
  if (!/^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(family.id)) errors.push("id is not kebab-case");
  if (family.phrasings.length < 5) errors.push(`${family.phrasings.length} phrasings (< 5)`);
  family.phrasings.forEach((text, i) => {
    const order = phrasingOrder(text);
    for (const p of family.params)
      if (order.filter((n) => n === p).length !== 1)
        errors.push(`phrasing ${i} names {${p}} ${order.filter((n) => n === p).length} times`);
    for (const n of order) if (!family.params.includes(n)) errors.push(`phrasing ${i} names unknown {${n}}`);
    if (/\d/.test(text.replace(/\{[^}]*\}/g, ""))) errors.push(`phrasing ${i} has digits outside its slots`);
  });
  return errors;
}

const chosen = FAMILIES.filter((f) => f.id.startsWith(prefix));
const ids = new Set<string>();
const instances: Instance[] = [];
let failures = 0;
for (const family of chosen) {
  if (ids.has(family.id)) console.log(`${family.id}: duplicate id`);
  ids.add(family.id);
  const errors = structure(family);
  const rng = seededRng(`check/${family.id}`);
  for (let s = 0; s < samples && errors.length === 0; s++) {
    const params = family.sample(rng);
    for (let i = 0; i < family.phrasings.length; i++) {
      const instance = renderInstance(family, i, params, rng);
      const problem = instanceProblem(instance);
      if (problem) {
        errors.push(`phrasing ${i}: ${problem}: ${instance.problem}`);
        break;
      }
      instances.push(instance);
    }
  }
  for (const e of errors.slice(0, 5)) console.log(`${family.id}: ${e}`);
  failures += errors.length ? 1 : 0;
}

// Every program in one python3 process, each in fresh globals, PARAMS as the product passes them.
const script = `
import sys, json, io, contextlib
for line in sys.stdin:
    job = json.loads(line)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(job["program"], {"PARAMS": [eval(x) for x in job["literals"]]})
        print(json.dumps({"ok": True, "out": out.getvalue()}))
    except Exception as e:
        print(json.dumps({"ok": False, "out": repr(e)}))
`;
const input = instances.map((i) => JSON.stringify({ program: i.program, literals: i.literals })).join("\n");
const run = spawnSync("python3", ["-c", script], { input, encoding: "utf8", maxBuffer: 1 << 28 });
if (run.status !== 0) throw new Error(`python3 failed: ${run.stderr}`);
const results = run.stdout
  .trim()
  .split("\n")
  .map((l) => JSON.parse(l) as { ok: boolean; out: string });
const wrong = new Map<string, string>();
results.forEach((r, k) => {
  const inst = instances[k] as Instance;
  const printed = r.out.trim().split("\n").at(-1) ?? "";
  if (!r.ok || !answersEqual(printed, inst.answer))
    if (!wrong.has(inst.familyId))
      wrong.set(
        inst.familyId,
        `program printed ${JSON.stringify(r.out.trim())}, answer() says ${inst.answer}: ${inst.problem}`,
      );
});
for (const [id, why] of wrong) console.log(`${id}: ${why}`);
const byDomain = new Map<string, number>();
for (const f of chosen) byDomain.set(f.domain, (byDomain.get(f.domain) ?? 0) + 1);
console.log(
  `${chosen.length} families (${[...byDomain].map(([d, n]) => `${d} ${n}`).join(", ")}), ${instances.length} instances; ` +
    `${failures + wrong.size} families with problems`,
);
process.exitCode = failures + wrong.size > 0 ? 1 : 0;
