/**
 * One program on several parameter sets in one sandbox job (issue 34's 30 s start): a deposit's
 * probe runs (param-probe.ts) are the same program of the same depositor on numbers the edge
 * chose, and a fresh interpreter per run cost the WebAssembly sandbox about half a second of CPU
 * each, 17 runs per starter problem. The job is a small Python driver that runs the program once
 * per set, each time as the sandbox would (`PARAMS` its own list, a fresh `__main__` namespace,
 * stdout and stderr its own, SystemExit its exit status), and puts back between runs what a
 * program changes through ordinary Python: the modules it imported or changed (module dicts),
 * builtins, `sys.path`, the recursion limit, the decimal context, the environment, the working
 * directory and the files it left there and in /tmp. The first and the last set are the verified
 * numbers, which must print the verified answer both times; a job that fails, runs past a limit,
 * prints what is not the driver's report, or misses that answer proves nothing, and its sets are
 * run the old way, one clean interpreter each. Why that keeps the deposit's guarantees:
 * docs/router.md, "Probe runs in one job".
 */
import { answersEqual, extractAnswer } from "../../shared/answers.js";
import {
  failedExitVerdict,
  LIMITS,
  MAX_SANDBOX_PARAMS,
  type SandboxRunResult,
} from "../../shared/protocol.js";
import type { GpuPool } from "../cluster/gpu-pool.js";

/** What one run of a batch printed, judged as the sandbox judges a run without `expect`. */
export interface BatchRun {
  verdict: SandboxRunResult["verdict"];
  answer: string | null;
}

/** First word of the driver's report line. */
const REPORT = "KVGRAFT_BATCH";

/**
 * The driver's source for `program` on sets of `arity` numbers each, passed as one flat `PARAMS`
 * (the sandbox checks each number: gpu-node/sandbox/params.ts). Its last stdout line is the report.
 */
export function batchSource(program: string, arity: number): string {
  return `
import builtins as _b, contextlib as _c, decimal as _d, io as _io, json as _j, os as _o, shutil as _sh, sys as _s, traceback as _t
_code = compile(${JSON.stringify(program)}, "/job/main.py", "exec")
_sets = [PARAMS[_i:_i + ${arity}] for _i in range(0, len(PARAMS), ${arity})]
# This driver is one Python frame more than a program run alone: the limit the program sets and
# reads is one less than the interpreter's, so it recurses as deep as it would alone.
_setlimit, _getlimit = _s.setrecursionlimit, _s.getrecursionlimit
_s.setrecursionlimit = lambda n: _setlimit(n + 1)
_s.getrecursionlimit = lambda: _getlimit() - 1
_path, _limit, _context, _env = list(_s.path), _getlimit() + 1, _d.getcontext().copy(), dict(_o.environ)
_modules = dict(_s.modules)
_dicts = {_n: dict(vars(_m)) for _n, _m in _modules.items() if _n != "__main__" and hasattr(_m, "__dict__")}
_home = _o.getcwd()
_dirs = {_p: set(_o.listdir(_p)) for _p in (_home, "/tmp") if _o.path.isdir(_p)}
_out, _err = _s.stdout, _s.stderr
def _restore():
    _s.stdout, _s.stderr = _out, _err
    for _n in [_n for _n in _s.modules if _n not in _modules]:
        del _s.modules[_n]
    _s.modules.update(_modules)
    for _n, _saved in _dicts.items():
        _live = vars(_modules[_n])
        if len(_live) != len(_saved) or any(_live.get(_k, _restore) is not _v for _k, _v in _saved.items()):
            for _k in [_k for _k in _live if _k not in _saved]:
                del _live[_k]
            _live.update(_saved)
    _s.path[:] = _path
    _setlimit(_limit)
    _d.setcontext(_context.copy())
    _o.environ.clear()
    _o.environ.update(_env)
    _o.chdir(_home)
    for _p, _names in _dirs.items():
        for _n in set(_o.listdir(_p)) - _names:
            _f = _o.path.join(_p, _n)
            if _o.path.isdir(_f) and not _o.path.islink(_f):
                _sh.rmtree(_f, ignore_errors=True)
            else:
                _o.unlink(_f)
_setlimit(_limit)
_report = []
for _p in _sets:
    _so, _se, _status = _io.StringIO(), _io.StringIO(), 0
    try:
        with _c.redirect_stdout(_so), _c.redirect_stderr(_se):
            try:
                exec(_code, {"__name__": "__main__", "__file__": "/job/main.py", "__builtins__": _b, "PARAMS": _p})
            except SystemExit as _x:
                if _x.code is None or isinstance(_x.code, int):
                    _status = (_x.code or 0) & 0xFF
                else:
                    print(_x.code, file=_s.stderr)
                    _status = 1
            except BaseException as _x:
                _t.print_exception(type(_x), _x, _x.__traceback__.tb_next)
                _status = 1
    finally:
        _restore()
    _report.append([_status, _so.getvalue(), _se.getvalue()])
print("\\n${REPORT}", _j.dumps(_report))
`;
}

/** The runs of a batch job's result, or null when the job proves nothing (see the module's comment). */
export function batchRuns(result: SandboxRunResult, count: number): BatchRun[] | null {
  if (result.verdict !== "ok" || result.answer === null || !result.answer.startsWith(`${REPORT} `))
    return null;
  let report: unknown;
  try {
    report = JSON.parse(result.answer.slice(REPORT.length + 1));
  } catch {
    return null;
  }
  if (!Array.isArray(report) || report.length !== count) return null;
  const runs: BatchRun[] = [];
  for (const entry of report) {
    if (!Array.isArray(entry) || entry.length !== 3) return null;
    const [status, stdout, stderr] = entry as unknown[];
    if (typeof status !== "number" || typeof stdout !== "string" || typeof stderr !== "string") return null;
    const verdict = status === 0 ? "ok" : failedExitVerdict(stderr);
    runs.push({ verdict, answer: extractAnswer(stdout) });
  }
  return runs;
}

/**
 * Runs `program` on every set of `sets` (each as many numbers as `literals`) and returns what each
 * printed, in order: in batch jobs of as many sets as one request carries, the verified numbers
 * (`literals`, answer `answer`) first and last in each; a job that proves nothing is replaced by
 * one run per set. The jobs go at once (the sandbox queues them).
 */
export async function runSets(
  gpu: Pick<GpuPool, "runProgram">,
  program: string,
  literals: readonly string[],
  answer: string,
  sets: readonly (readonly string[])[],
): Promise<BatchRun[]> {
  const arity = literals.length;
  const perJob = arity === 0 ? 0 : Math.floor(MAX_SANDBOX_PARAMS / arity) - 2;
  const source = batchSource(program, arity);
  if (perJob < 1 || source.length > LIMITS.programChars) return runEach(gpu, program, sets);
  const chunks: (readonly string[])[][] = [];
  for (let i = 0; i < sets.length; i += perJob) chunks.push(sets.slice(i, i + perJob));
  const done = await Promise.all(
    chunks.map(async (chunk) => {
      const all = [literals, ...chunk, literals];
      const runs = batchRuns(await gpu.runProgram({ program: source, params: all.flat() }), all.length);
      const ends = runs ? [runs[0], runs[runs.length - 1]] : [];
      const verified = ends.every(
        (r) => r?.verdict === "ok" && r.answer !== null && answersEqual(r.answer, answer),
      );
      return runs && verified ? runs.slice(1, -1) : runEach(gpu, program, chunk);
    }),
  );
  return done.flat();
}

/** One clean interpreter per set. */
async function runEach(
  gpu: Pick<GpuPool, "runProgram">,
  program: string,
  sets: readonly (readonly string[])[],
): Promise<BatchRun[]> {
  const results = await Promise.all(sets.map((params) => gpu.runProgram({ program, params })));
  return results.map((r) => ({ verdict: r.verdict, answer: r.answer }));
}
