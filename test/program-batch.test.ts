/**
 * A deposit's probe runs in one sandbox job (edge/routing/program-batch.ts): the same profile and
 * probe runs as one clean interpreter per run, state a run leaves is not seen by the next, and a
 * job that proves nothing (a changed answer on the verified numbers, a limit) is run again one
 * set per interpreter. Real sandbox on both backends (the WebAssembly one needs no python3; the
 * bubblewrap one, which runs the driver on the host's CPython, skips saying why without bubblewrap).
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { profileProgram } from "../edge/routing/param-probe.js";
import { batchSource, runSets } from "../edge/routing/program-batch.js";
import { Sandbox } from "../gpu-node/sandbox/sandbox.js";
import { normalizeProblem, problemTemplate } from "../shared/normalize.js";
import type { ProgramParam } from "../shared/params.js";
import type { SandboxRunRequest } from "../shared/protocol.js";
import { BACKENDS } from "./helpers/sandbox.js";

/** The backend under test: each describe block below opens its own. */
let sandbox: Sandbox;

/** The sandbox as the edge calls it, counting jobs; `batches: false` fails every batch job. */
function runner(batches = true) {
  const jobs = { single: 0, batch: 0 };
  return {
    jobs,
    gpu: {
      async runProgram(req: SandboxRunRequest) {
        const isBatch = req.program.includes("KVGRAFT_BATCH");
        jobs[isBatch ? "batch" : "single"]++;
        const run = await sandbox.run({
          source: isBatch && !batches ? "raise SystemExit(1)" : req.program,
          params: req.params as ProgramParam[],
          ...(req.expect !== undefined ? { expect: req.expect } : {}),
        });
        return { ...run, isolation: String(run.isolation) };
      },
    },
  };
}

const starter = readFileSync(new URL("../edge/starter-library.jsonl", import.meta.url), "utf8")
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l) as { id: string; problem: string; program: string; answer: string });

for (const { mode, skip } of BACKENDS)
  describe.skipIf(skip !== null)(
    `probe runs in one sandbox job (${mode}${skip ? `; skipped: ${skip}` : ""})`,
    () => {
      beforeAll(async () => {
        sandbox = await Sandbox.create({ backend: mode, warm: 2, limits: { wallMs: 4000, cpuSeconds: 2 } });
      }, 120_000);
      afterAll(() => sandbox?.close());

      // Two of the starter library's programs, of one and of three numbers.
      const picks = [
        ...new Map(starter.map((e) => [problemTemplate(normalizeProblem(e.problem)).literals.length, e])),
      ]
        .filter(([n]) => n === 1 || n === 3)
        .map(([, e]) => e);

      it.each(picks.map((e) => [e.id, e]))(
        "%s: the same profile and probe runs as one interpreter per run, in one job",
        async (_id, e) => {
          const { literals } = problemTemplate(normalizeProblem(e.problem));
          const one = runner();
          const batched = await profileProgram(one.gpu, e.program, literals, e.answer);
          const each = runner(false);
          const separate = await profileProgram(each.gpu, e.program, literals, e.answer);
          expect(batched).toEqual(separate);
          expect(batched.runs.length).toBeGreaterThan(0);
          expect(one.jobs).toEqual({ single: 0, batch: 1 });
          // The failed batch job, then one job per probe set.
          expect(each.jobs.batch).toBe(1);
          expect(each.jobs.single).toBeGreaterThanOrEqual(batched.runs.length);
        },
        120_000,
      );

      it("a run does not see what the one before it changed", async () => {
        // Each line would print more than 0 on a second run in the same interpreter, were it not put back.
        const program = [
          "import builtins, decimal, json, math, os, sys",
          "seen = [getattr(math, 'k', 0), getattr(builtins, 'k', 0), len(os.listdir('.')), sys.path.count('/x'),",
          "        int(sys.getrecursionlimit() == 9000), int(decimal.getcontext().prec == 5), int('K' in os.environ),",
          "        int('fractions' in sys.modules and hasattr(sys.modules['fractions'], 'k'))]",
          "math.k = 1; builtins.k = 1; open('left.txt', 'w').write('x'); os.mkdir('d'); sys.path.append('/x')",
          "sys.setrecursionlimit(9000); decimal.getcontext().prec = 5; os.environ['K'] = '1'",
          "import fractions; fractions.k = 1",
          "print(PARAMS[0] + sum(seen))",
        ].join("\n");
        const { gpu, jobs } = runner();
        const runs = await runSets(gpu, program, ["1"], "1", [["2"], ["3"], ["4"]]);
        expect(runs).toEqual([
          { verdict: "ok", answer: "2" },
          { verdict: "ok", answer: "3" },
          { verdict: "ok", answer: "4" },
        ]);
        expect(jobs).toEqual({ single: 0, batch: 1 });
      }, 60_000);

      it("state that is not put back changes the verified answer's run, so the sets run one interpreter each", async () => {
        // A class attribute survives the driver's resets; the last run on the verified numbers prints 1 + 4.
        const program = [
          "import collections",
          "n = getattr(collections.Counter, 'runs', 0)",
          "collections.Counter.runs = n + 1",
          "print(PARAMS[0] + n)",
        ].join("\n");
        const { gpu, jobs } = runner();
        const runs = await runSets(gpu, program, ["1"], "1", [["2"], ["3"], ["4"]]);
        expect(runs).toEqual([
          { verdict: "ok", answer: "2" },
          { verdict: "ok", answer: "3" },
          { verdict: "ok", answer: "4" },
        ]);
        expect(jobs).toEqual({ single: 3, batch: 1 });
      }, 60_000);

      it("gives each run the verdict it gets alone: error, memory, exit status, recursion depth", async () => {
        const program = [
          "import sys",
          "x = PARAMS[0]",
          "if x == 2: raise ValueError('two')",
          "if x == 3: raise MemoryError()",
          "if x == 4: sys.exit(3)",
          "if x == 5: sys.exit(0)",
          "def depth(n): return 0 if n == 0 else 1 + depth(n - 1)",
          "if x >= 100:",
          "    sys.setrecursionlimit(60)",
          "    print(depth(x - 100))",
          "print(x)",
        ].join("\n");
        const sets = [["2"], ["3"], ["4"], ["5"], ...Array.from({ length: 10 }, (_, i) => [String(150 + i)])];
        const { gpu, jobs } = runner();
        const batched = await runSets(gpu, program, ["1"], "1", sets);
        const alone = await runner(false);
        const separate = await runSets(alone.gpu, program, ["1"], "1", sets);
        expect(batched).toEqual(separate);
        expect(jobs).toEqual({ single: 0, batch: 1 });
        expect(batched.slice(0, 4).map((r) => r.verdict)).toEqual(["error", "memory", "error", "ok"]);
        // The recursion limit is reached inside the probed range, at the same depth both ways.
        const depths = batched.slice(4).map((r) => r.verdict);
        expect(depths).toContain("ok");
        expect(depths).toContain("error");
      }, 120_000);

      it("a set past the time limit fails the job, and each set then gets its own verdict", async () => {
        const program = "x = PARAMS[0]\nwhile x == 3:\n    pass\nprint(x)";
        const { gpu, jobs } = runner();
        const runs = await runSets(gpu, program, ["1"], "1", [["2"], ["3"]]);
        expect(runs).toEqual([
          { verdict: "ok", answer: "2" },
          { verdict: "timeout", answer: null },
        ]);
        expect(jobs).toEqual({ single: 2, batch: 1 });
      }, 60_000);

      it("carries any program text into the driver unchanged", async () => {
        const program = `s = '"""' + "\\\\" + "\u00e9\u2028'"\nprint(len(s) * PARAMS[0])`;
        expect(batchSource(program, 1)).toContain(JSON.stringify(program));
        const { gpu, jobs } = runner();
        const alone = await sandbox.run({ source: program, params: ["2"] });
        expect(alone.verdict, alone.stderr).toBe("ok");
        const first = await sandbox.run({ source: program, params: ["1"] });
        expect(await runSets(gpu, program, ["1"], first.answer as string, [["2"]])).toEqual([
          { verdict: "ok", answer: alone.answer },
        ]);
        expect(jobs).toEqual({ single: 0, batch: 1 });
      }, 60_000);
    },
  );
