/**
 * The sandbox on both backends (gpu-node/sandbox): the verdict contract, the hostile set (each
 * program gets the same verdict on WebAssembly and under bubblewrap), escapes that must fail on
 * both, then what is particular to each backend. The bubblewrap tests skip, saying why, only
 * where bubblewrap is not installed; the WebAssembly backend runs everywhere.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { starterJobs } from "../bench/sandbox-bench.js";
import { SandboxPool } from "../gpu-node/sandbox/pool.js";
import {
  type IsolationMode,
  type ProgramJob,
  type ProgramResult,
  Sandbox,
  type Verdict,
} from "../gpu-node/sandbox/sandbox.js";
import { permissionFlags, pyodideDir } from "../gpu-node/sandbox/wasm.js";
import { DomainError } from "../shared/errors.js";
import { BACKENDS, NO_BWRAP_REASON } from "./helpers/sandbox.js";

// Small limits keep hostile programs fast; the defaults are tested for shape only.
const LIMITS = { cpuSeconds: 1, wallMs: 2000, scratchBytes: 4 * 1024 * 1024, processes: 16 };
const MARKER = `kvgraft-marker-${randomUUID()}`;
process.env.KVGRAFT_SANDBOX_TEST_MARKER = MARKER;
const HOST_PASSWD = readFileSync("/etc/passwd", "utf8").split("\n")[0] ?? "root:x:0:0";

/** Programs that must not get their way, with the verdict each must get on either backend. */
const HOSTILE: Record<string, { source: string; verdicts: Verdict[] }> = {
  infiniteLoop: { source: "while True:\n    pass", verdicts: ["timeout"] },
  hugePower: { source: "print(pow(10**7, 10**7) % 7)", verdicts: ["timeout", "memory"] },
  memoryBomb: { source: "hoard = []\nwhile True:\n    hoard.append(bytearray(10**6))", verdicts: ["memory"] },
  forkBomb: { source: "import os\nwhile True:\n    os.fork()", verdicts: ["error", "timeout"] },
  gigabyteOutput: {
    source: "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)",
    verdicts: ["output_limit"],
  },
  stderrFlood: {
    source: "import sys\nwhile True:\n    sys.stderr.write('e' * 4096)",
    verdicts: ["output_limit"],
  },
  sleeper: { source: "import time\ntime.sleep(60)", verdicts: ["timeout"] },
  recursionBomb: { source: "def f(n):\n    return f(n + 1)\nf(0)", verdicts: ["error"] },
  threadBomb: {
    source:
      "import threading, time\nfor _ in range(1000):\n    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()",
    verdicts: ["error"],
  },
  jsBridge: { source: "import js\nprint(js.process.env)", verdicts: ["error"] },
  pyodideBridge: {
    source: "import pyodide_js\npyodide_js.mountNodeFS('/host', '/etc')",
    verdicts: ["error"],
  },
};

/** The parent of a process, or null when it is gone. */
function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
}

/** Whether a process descends from this test process (other sessions on the machine run sandboxes too). */
function ours(pid: number): boolean {
  for (let p: number | null = pid; p !== null && p > 1; p = parentOf(p)) if (p === process.pid) return true;
  return false;
}

/** Host processes that belong to a job: its program, or anything carrying the test's marker. */
function jobProcesses(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid || !ours(Number(pid))) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      // An argument of its own: a bubblewrap job's interpreter, not a WebAssembly child's source text.
      if (cmdline.split("\0").includes("/job/main.py") || cmdline.includes(MARKER))
        found.push(`${pid} ${cmdline}`);
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** WebAssembly children of this process (running or waiting). */
function wasmChildren(): number {
  let n = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (
        ppid === process.pid &&
        readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--experimental-permission")
      )
        n++;
    } catch {
      // Gone.
    }
  }
  return n;
}

/** A loopback TCP server that counts connections. */
async function countingServer(): Promise<{ server: Server; port: number; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as { port: number }).port, connections: () => connections };
}

let workDir: string;
let dataDir: string;

beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), "kvgraft-sandbox-test-work-"));
  dataDir = mkdtempSync(join(tmpdir(), "kvgraft-sandbox-test-data-"));
  writeFileSync(join(dataDir, "block.json"), `{"secret":"${MARKER}"}`);
  writeFileSync(join(dataDir, "admin.key"), MARKER, { mode: 0o600 });
});

afterAll(() => {
  rmSync(workDir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

/** A sandbox of one backend for a describe block, and helpers that run programs in it. */
function backendSuite(mode: IsolationMode, skip: string | null) {
  let sandbox: Sandbox | undefined;
  beforeAll(async () => {
    if (skip === null) sandbox = await Sandbox.create({ backend: mode, limits: LIMITS, workDir, warm: 2 });
  });
  afterAll(() => sandbox?.close());
  beforeEach((ctx) => ctx.skip(skip !== null, skip ?? undefined));
  const get = (): Sandbox => {
    if (!sandbox) throw new Error(`no ${mode} sandbox`);
    return sandbox;
  };
  const run = (job: ProgramJob): Promise<ProgramResult> => get().run(job);
  /** Runs `source` and returns its stdout lines, checking that it ended well. */
  const lines = async (source: string): Promise<string[]> => {
    const result = await run({ source });
    expect(result.verdict, result.stderr).toBe("ok");
    return result.stdout.trimEnd().split("\n");
  };
  return { get, run, lines };
}

for (const { mode, skip } of BACKENDS) {
  describe(`sandbox on ${mode}`, () => {
    const { get, run, lines } = backendSuite(mode, skip);

    it(`runs on ${mode} and says so in every verdict`, async () => {
      expect(get().isolation).toBe(mode);
      const result = await run({
        source: "with open('note.txt', 'w') as f:\n    f.write('17')\nprint(open('note.txt').read())",
        expect: "17",
      });
      expect(result).toMatchObject({ verdict: "ok", exitCode: 0, answer: "17", stdout: "17\n", stderr: "" });
      expect(result.isolation).toBe(mode);
      expect(result.cpuMs).toBeGreaterThanOrEqual(0);
      expect(result.wallMs).toBeGreaterThan(0);
      expect(readdirSync(workDir)).toEqual([]);
    });

    it("prepends PARAMS as the first line, numbers in order", async () => {
      const source = "print(repr(PARAMS))\nprint([type(p).__name__ for p in PARAMS])\nprint(sum(PARAMS))";
      const result = await run({ source, params: [3, 4.5, -2, 1e21], expect: "1e21" });
      expect(result.verdict).toBe("ok");
      expect(result.stdout).toBe("[3, 4.5, -2, 1e+21]\n['int', 'float', 'int', 'float']\n1e+21\n");
      const first = await run({ source: "print(open(__file__).readline().strip())", params: [1, 2] });
      expect(first.answer).toBe("PARAMS = [1,2]");
    });

    it("judges the last non-empty line against expect", async () => {
      const wrong = await run({ source: "print('thinking')\nprint(41)\n", expect: "42" });
      expect(wrong).toMatchObject({ verdict: "wrong_answer", answer: "41", exitCode: 0 });
      const numeric = await run({ source: "print('0.50')", expect: "1/2" });
      expect(numeric.verdict).toBe("ok");
      const silent = await run({ source: "pass", expect: "42" });
      expect(silent).toMatchObject({ verdict: "wrong_answer", answer: null });
    });

    it("reports a crash as error with its traceback, and sys.exit's status", async () => {
      const result = await run({ source: "print('partial')\nraise ValueError('boom')", expect: "partial" });
      expect(result).toMatchObject({ verdict: "error", exitCode: 1 });
      expect(result.stderr).toContain("ValueError: boom");
      expect(result.stderr).toContain('File "/job/main.py", line 3');
      expect(await run({ source: "import sys\nprint(1)\nsys.exit(3)" })).toMatchObject({
        verdict: "error",
        exitCode: 3,
      });
      expect(await run({ source: "import sys\nprint(1)\nsys.exit(0)", expect: "1" })).toMatchObject({
        verdict: "ok",
        exitCode: 0,
      });
      expect(await run({ source: "print(input())" })).toMatchObject({ verdict: "error" });
    });

    it("rejects bad jobs with domain errors", async () => {
      await expect(run({ source: "print(1)", params: [Number.NaN] })).rejects.toMatchObject({
        status: 400,
        code: "invalid_params",
      });
      await expect(run({ source: "x".repeat(2 * 1024 * 1024) })).rejects.toMatchObject({
        status: 413,
        code: "program_too_large",
      });
      await expect(run({ source: "print(1)", limits: { cpuSeconds: 0 } })).rejects.toBeInstanceOf(
        DomainError,
      );
    });

    for (const [name, { source, verdicts }] of Object.entries(HOSTILE)) {
      it(`hostile: ${name} gets ${verdicts.join(" or ")}`, async () => {
        const result = await run({ source, expect: "1" });
        expect(verdicts, result.stderr.slice(-500)).toContain(result.verdict);
        expect(result.wallMs).toBeLessThan(LIMITS.wallMs + 2000);
        expect(result.stdout.length).toBeLessThanOrEqual(64 * 1024);
        expect(result.stderr.length).toBeLessThanOrEqual(64 * 1024);
        expect(jobProcesses()).toEqual([]);
        // The next program runs as usual.
        expect((await run({ source: "print(6 * 7)", expect: "42" })).verdict).toBe("ok");
      });
    }

    it("stops a gigabyte of output at the cap, fast", async () => {
      const result = await run(HOSTILE.gigabyteOutput as ProgramJob);
      expect(result.verdict).toBe("output_limit");
      expect(result.stdout.length).toBe(64 * 1024);
      expect(result.wallMs).toBeLessThan(2000);
    });

    it("cannot read host files, the data directory, or any environment", async () => {
      const targets = [
        "/etc/passwd",
        "/etc/shadow",
        join(dataDir, "block.json"),
        join(dataDir, "admin.key"),
        join(process.cwd(), "package.json"),
        "/proc/1/environ",
        `/proc/${process.pid}/environ`,
      ];
      const out = await lines(`
import os
for path in ${JSON.stringify(targets)}:
    try:
        print("READ", path, open(path).read())
    except OSError as err:
        print("blocked", path, type(err).__name__)
try:
    print("self", repr(open("/proc/self/environ").read()))
except OSError:
    print("self", repr(""))
print("environ", sorted(k for k in os.environ if k != "LC_CTYPE"))
print("getenv", os.getenv("KVGRAFT_SANDBOX_TEST_MARKER"))
print("listing", sorted(os.listdir("/")))`);
      const text = out.join("\n");
      expect(text).not.toContain("READ");
      expect(text).not.toContain(MARKER);
      expect(text).not.toContain(HOST_PASSWD);
      expect(out.filter((line) => line.startsWith("blocked "))).toHaveLength(targets.length);
      expect(out).toContain("self ''");
      expect(out).toContain("environ []");
      expect(out).toContain("getenv None");
      expect(out.at(-1)).toMatch(/^listing \[/);
      expect(out.at(-1)).not.toMatch(/'(etc|data)'/);
    });

    it("escapes through subprocess, os.system and ctypes reach nothing of the host", async () => {
      const out = await lines(`
import os, subprocess
try:
    print("ran", subprocess.run(["cat", "/etc/passwd"], capture_output=True).stdout)
except OSError as err:
    print("blocked subprocess", type(err).__name__)
try:
    print("system", os.system("cat /etc/passwd > /dev/null"))
except OSError as err:
    print("blocked system", type(err).__name__)
try:
    import ctypes
    getenv = ctypes.CDLL(None).getenv
    getenv.restype = ctypes.c_char_p
    print("ctypes getenv", getenv(b"KVGRAFT_SANDBOX_TEST_MARKER"))
except Exception as err:
    print("blocked ctypes", type(err).__name__)
print("done")`);
      const text = out.join("\n");
      expect(text).not.toContain(MARKER);
      expect(text).not.toContain(HOST_PASSWD);
      expect(out.at(-1)).toBe("done");
    });

    it("cannot fill its scratch space past the total size, however many files it writes", async () => {
      const out = await lines(`
import errno
total = 0
try:
    for i in range(64):
        with open(f"fill-{i}", "wb") as f:
            f.write(b"x" * (512 * 1024))
        total += 512 * 1024
except OSError as err:
    print("stopped", err.errno == errno.ENOSPC)
print(total)`);
      expect(out[0]).toBe("stopped True");
      expect(Number(out[1])).toBeLessThanOrEqual(LIMITS.scratchBytes);
    });

    it("leaves nothing for the next program: files, modules, globals", async () => {
      const first = await lines(`
import builtins, json, sys
with open("left-behind.txt", "w") as f:
    f.write("${MARKER}")
try:
    with open("/tmp/left-behind.txt", "w") as f:
        f.write("${MARKER}")
except OSError:
    pass
builtins.LEFT = "${MARKER}"
json.dumps = lambda *a, **k: "${MARKER}"
sys.modules["planted"] = json
print("planted")`);
      expect(first).toEqual(["planted"]);
      const out = await lines(`
import builtins, json, os, sys
print(os.path.exists("left-behind.txt"), os.path.exists("/tmp/left-behind.txt"))
print(hasattr(builtins, "LEFT"), json.dumps([1]), "planted" in sys.modules)`);
      expect(out).toEqual(["False False", "False [1] False"]);
    });

    it("cannot reach host UNIX sockets, path or abstract", async () => {
      let connections = 0;
      const listen = async (path: string) => {
        const server: Server = createServer((socket) => {
          connections++;
          socket.destroy();
        });
        await new Promise<void>((resolve) => server.listen(path, resolve));
        return server;
      };
      const pathSocket = join(dataDir, `host-${mode}.sock`);
      const abstract = `\0kvgraft-test-${randomUUID()}`;
      const servers = [await listen(pathSocket), await listen(abstract)];
      try {
        const out = await lines(`
import socket
for address in [${JSON.stringify(pathSocket)}, ${JSON.stringify(abstract)}]:
    try:
        s = socket.socket(getattr(socket, "AF_UNIX", 1))
        s.connect(address)
        print("CONNECTED", repr(address))
    except OSError as err:
        print("blocked", err.errno)`);
        expect(out.join("\n")).not.toContain("CONNECTED");
        expect(out.filter((line) => line.startsWith("blocked "))).toHaveLength(2);
        expect(connections).toBe(0);
      } finally {
        for (const server of servers) server.close();
      }
    });

    it("cannot signal host processes", async () => {
      const host = spawn("sleep", ["30"], { stdio: "ignore" });
      try {
        const out = await lines(`
import os, signal
try:
    os.kill(${host.pid}, signal.SIGKILL)
    print("KILLED host pid")
except (OSError, AttributeError) as err:
    print("blocked", type(err).__name__)`);
        expect(out[0]).toMatch(/^blocked /);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(host.exitCode).toBeNull();
        expect(host.signalCode).toBeNull();
      } finally {
        host.kill("SIGKILL");
      }
    });

    it("cannot open sockets to loopback or the outside", async () => {
      const { server, port, connections } = await countingServer();
      try {
        const out = await lines(`
import socket
for host, port in [("127.0.0.1", ${port}), ("1.1.1.1", 80), ("8.8.8.8", 53)]:
    try:
        s = socket.socket()
        s.settimeout(2)
        s.connect((host, port))
        print("CONNECTED", host)
    except OSError as err:
        print("blocked", host, err.errno)`);
        expect(out.join("\n")).not.toContain("CONNECTED");
        expect(out.filter((line) => line.startsWith("blocked "))).toHaveLength(3);
        expect(connections()).toBe(0);
      } finally {
        server.close();
      }
    });

    it("pool: runs 30 mixed jobs in parallel with correct verdicts and no cross-talk", async () => {
      const pool = new SandboxPool(get(), { concurrency: 2, maxQueued: 30, maxWaitMs: 120_000 });
      const hostile = Object.values(HOSTILE);
      const jobs: { job: ProgramJob; verdicts: Verdict[]; token?: string }[] = [];
      for (let i = 0; i < 30; i++) {
        const bad = hostile[i % hostile.length];
        if (i % 5 === 4 && bad) {
          // Sleeps end by the wall clock; keep it short so the suite stays fast.
          jobs.push({ job: { source: bad.source, limits: { wallMs: 4000 } }, verdicts: bad.verdicts });
        } else {
          const token = randomUUID();
          const source = `print(${JSON.stringify(token)})\nprint(PARAMS[0] * PARAMS[1])`;
          jobs.push({ job: { source, params: [i, 3], expect: String(i * 3) }, verdicts: ["ok"], token });
        }
      }
      const results = await Promise.all(jobs.map(({ job }) => pool.runProgram(job)));
      results.forEach((result, i) => {
        const { verdicts, token } = jobs[i] ?? { verdicts: [] };
        expect(verdicts, `job ${i}: ${result.stderr}`).toContain(result.verdict);
        if (token) expect(result.stdout).toBe(`${token}\n${i * 3}\n`);
        for (const other of jobs)
          if (other.token && other.token !== token) expect(result.stdout).not.toContain(other.token);
      });
      expect(pool.stats).toMatchObject({ running: 0, waiting: 0, rejected: 0 });
      expect(readdirSync(workDir)).toEqual([]);
    });

    it("pool sheds: a full queue is a 429, a long wait a 503, both with Retry-After; an aborted wait never runs", async () => {
      const pool = new SandboxPool(get(), { concurrency: 1, maxQueued: 1, maxWaitMs: 300, retryAfterS: 2 });
      // A generous wall clock: CI runs this beside other sandbox files on 2 cores, and the point here
      // is the queue, not the limit.
      const nap = {
        source: "import time\ntime.sleep(1)\nprint(1)",
        limits: { wallMs: 60_000, cpuSeconds: 30 },
      };
      const first = pool.runProgram(nap);
      const second = pool.runProgram(nap);
      await expect(pool.runProgram(nap)).rejects.toMatchObject({
        status: 429,
        code: "sandbox_busy",
        retryAfterS: 2,
      });
      await expect(second).rejects.toMatchObject({ status: 503, code: "sandbox_busy", retryAfterS: 2 });
      const reason = new Error("deadline");
      const controller = new AbortController();
      const third = pool.runProgram({ source: "print(1)" }, controller.signal);
      controller.abort(reason);
      await expect(third).rejects.toBe(reason);
      expect((await first).verdict).toBe("ok");
      expect(pool.stats).toMatchObject({ running: 0, waiting: 0, rejected: 1 });
    });
  });
}

describe("both backends", () => {
  beforeEach((ctx) => ctx.skip(NO_BWRAP_REASON !== null, NO_BWRAP_REASON ?? undefined));

  it("give the same verdict on every hostile program and on the starter library's programs", async () => {
    const [wasm, bwrap] = await Promise.all(
      (["wasm", "bwrap"] as const).map((backend) => Sandbox.create({ backend, limits: LIMITS, workDir })),
    );
    try {
      const jobs: [string, ProgramJob][] = [
        ...Object.entries(HOSTILE).map(([name, { source }]): [string, ProgramJob] => [
          name,
          { source, expect: "1" },
        ]),
        ...starterJobs().map(({ id, job }): [string, ProgramJob] => [`starter ${id}`, job]),
      ];
      for (const [name, job] of jobs) {
        const [a, b] = [await (wasm as Sandbox).run(job), await (bwrap as Sandbox).run(job)];
        // hugePower may end by its CPU or its memory limit, whichever the backend meets first.
        if (name !== "hugePower") expect(`${name}: ${a.verdict}`).toBe(`${name}: ${b.verdict}`);
        if (name.startsWith("starter")) {
          expect(`${name}: ${a.verdict}`).toBe(`${name}: ok`);
          expect(a.stdout).toBe(b.stdout);
        }
      }
    } finally {
      wasm?.close();
      bwrap?.close();
    }
  });
});

describe("bubblewrap only", () => {
  const { run, lines } = backendSuite("bwrap", NO_BWRAP_REASON);

  it("cannot make a user namespace of its own, so cannot mount an uncapped tmpfs over scratch", async () => {
    const out = await lines(`
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x20000
if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
    print("blocked unshare", ctypes.get_errno())
elif libc.mount(b"none", b"/scratch", b"tmpfs", 0, b"size=1g") != 0:
    print("blocked mount", ctypes.get_errno())
else:
    print("MOUNTED", [l.split()[3] for l in open("/proc/mounts") if " /scratch " in l])
pid = os.fork()
if pid == 0:
    try:
        os.execv("/usr/bin/unshare", ["unshare", "-Ur", "true"])
    finally:
        os._exit(127)
print("unshare(1) exit", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))`);
    expect(out.join("\n")).not.toContain("MOUNTED");
    expect(out[0]).toBe("blocked unshare 1");
    expect(out[1]).toMatch(/^unshare\(1\) exit [1-9]/);
  });

  it("runs with no uid 0, no capabilities, and cannot become root", async () => {
    const out = await lines(`
import os
status = open("/proc/self/status").read()
print("uid", os.getuid(), os.geteuid())
print("caps", [l.split()[1] for l in status.splitlines() if l.startswith(("CapInh", "CapPrm", "CapEff", "CapAmb"))])
print("no new privileges", [l.split()[1] for l in status.splitlines() if l.startswith("NoNewPrivs")])
for attempt in ("setuid", "setgid"):
    try:
        getattr(os, attempt)(0)
        print("BECAME ROOT", attempt)
    except OSError as err:
        print("blocked", attempt, err.errno)`);
    const [uid, caps, noNewPrivs] = out;
    expect(uid).toMatch(/^uid (\d+) \1$/);
    expect(uid).not.toBe("uid 0 0");
    // Execution cannot gain any back: no_new_privs ignores setuid bits and file capabilities.
    expect(caps).toBe(
      `caps ${JSON.stringify(Array(4).fill("0000000000000000")).replaceAll('"', "'").replaceAll(",", ", ")}`,
    );
    expect(noNewPrivs).toBe("no new privileges ['1']");
    expect(out.join("\n")).not.toContain("BECAME ROOT");
  });

  it("caps its processes: a fork counter stops at the limit and nothing is left behind", async () => {
    const out = await lines(`
import os, time
made = 0
try:
    while made < 1000:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        made += 1
except OSError as err:
    print("stopped", err.errno)
print(made)`);
    expect(out[0]).toBe("stopped 11");
    expect(Number(out[1])).toBeLessThan(LIMITS.processes);
    expect(jobProcesses()).toEqual([]);
  });

  it("kills a double-forked daemon when the job times out, and when it exits", async () => {
    const daemon = (thenWait: boolean) => `
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", ${JSON.stringify(MARKER)}])
    os._exit(0)
print("forked")
${thenWait ? "time.sleep(60)" : ""}`;
    const timedOut = await run({ source: daemon(true) });
    expect(timedOut.verdict).toBe("timeout");
    expect(jobProcesses()).toEqual([]);
    const exited = await run({ source: daemon(false) });
    expect(exited).toMatchObject({ verdict: "ok", answer: "forked" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(jobProcesses()).toEqual([]);
    const after = await run({ source: "print(6 * 7)", expect: "42" });
    expect(after.verdict).toBe("ok");
  });

  it("cannot read host files, the data directory, or any environment", async () => {
    const targets = [
      "/etc/passwd",
      "/etc/shadow",
      join(dataDir, "block.json"),
      join(dataDir, "admin.key"),
      join(process.cwd(), "package.json"),
      "/proc/1/environ",
      `/proc/${process.pid}/environ`,
    ];
    const out = await lines(`
import os
for path in ${JSON.stringify(targets)}:
    try:
        print("READ", path, open(path).read())
    except OSError as err:
        print("blocked", path, type(err).__name__)
print("self", repr(open("/proc/self/environ").read()))
print("environ", sorted(k for k in os.environ if k != "LC_CTYPE"))
print("listing", sorted(os.listdir("/")))`);
    const text = out.join("\n");
    expect(text).not.toContain("READ");
    expect(text).not.toContain(MARKER);
    expect(out.filter((line) => line.startsWith("blocked "))).toHaveLength(targets.length);
    expect(out).toContain("self ''");
    expect(out).toContain("environ []");
    expect(out.at(-1)).toMatch(/^listing \[/);
    expect(out.at(-1)).not.toMatch(/'(etc|home|tmp|var|data)'/);
  });

  it("cannot write outside scratch, nor plant a setuid file that outlives it", async () => {
    const targets = [
      join(dataDir, "planted.txt"),
      "/usr/planted.txt",
      "/planted.txt",
      "/job/main.py",
      "/dev/shm/planted",
    ];
    const out = await lines(`
import os, shutil, stat, sys
for path in ${JSON.stringify(targets)}:
    try:
        with open(path, "a") as f:
            f.write("planted")
        print("WROTE", path)
    except OSError as err:
        print("blocked", path, type(err).__name__)
shutil.copy(sys.executable, "suid")
os.chmod("suid", 0o4755)
try:
    os.chown("suid", 0, 0)
    print("CHOWNED to root")
except OSError as err:
    print("blocked chown", err.errno)
mounts = [l for l in open("/proc/mounts") if " /scratch " in l]
print("scratch", mounts[0].split()[3])`);
    const text = out.join("\n");
    expect(text).not.toContain("WROTE");
    expect(text).not.toContain("CHOWNED");
    expect(out.filter((line) => line.startsWith("blocked "))).toHaveLength(targets.length + 1);
    expect(out.at(-1)).toMatch(/^scratch \S*\bnosuid\b/);
    expect(existsSync(join(dataDir, "planted.txt"))).toBe(false);
    expect(existsSync("/usr/planted.txt")).toBe(false);
    expect(existsSync("/planted.txt")).toBe(false);
    expect(readdirSync(workDir)).toEqual([]);
  });

  it("cannot fill scratch past its total size, however many files it writes", async () => {
    const out = await lines(`
total = 0
try:
    for i in range(64):
        with open(f"fill-{i}", "wb") as f:
            f.write(b"x" * (512 * 1024))
        total += 512 * 1024
except OSError as err:
    print("stopped", err.errno)
print(total)`);
    expect(out[0]).toBe("stopped 28");
    expect(Number(out[1])).toBeLessThanOrEqual(LIMITS.scratchBytes);
  });

  it("cannot reach host UNIX sockets, path or abstract", async () => {
    let connections = 0;
    const listen = async (path: string) => {
      const server: Server = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(path, resolve));
      return server;
    };
    const pathSocket = join(dataDir, "host.sock");
    const abstract = `\0kvgraft-test-${randomUUID()}`;
    const servers = [await listen(pathSocket), await listen(abstract)];
    try {
      const out = await lines(`
import socket
for address in [${JSON.stringify(pathSocket)}, ${JSON.stringify(abstract)}]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(address)
        print("CONNECTED", repr(address))
    except OSError as err:
        print("blocked", err.errno)`);
      expect(out.join("\n")).not.toContain("CONNECTED");
      expect(out.filter((line) => line.startsWith("blocked "))).toHaveLength(2);
      expect(connections).toBe(0);
    } finally {
      for (const server of servers) server.close();
    }
  });

  it("cannot signal host processes", async () => {
    const host = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      const out = await lines(`
import os, signal
try:
    os.kill(${host.pid}, signal.SIGKILL)
    print("KILLED host pid")
except OSError as err:
    print("blocked", err.errno)`);
      expect(out).toEqual(["blocked 3"]);
      expect(host.exitCode).toBeNull();
      expect(host.signalCode).toBeNull();
    } finally {
      host.kill("SIGKILL");
    }
  });

  it("cannot open sockets to loopback or the outside", async () => {
    let connections = 0;
    const server: Server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    try {
      const out = await lines(`
import socket
for host, port in [("127.0.0.1", ${port}), ("1.1.1.1", 80), ("8.8.8.8", 53)]:
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, port))
        print("CONNECTED", host)
    except OSError as err:
        print("blocked", host, err.errno)`);
      expect(out.join("\n")).not.toContain("CONNECTED");
      expect(out.filter((line) => line.startsWith("blocked "))).toHaveLength(3);
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });
});

describe("WebAssembly only", () => {
  const { run, lines } = backendSuite("wasm", null);

  it("the FFI cannot be had back: a re-imported _pyodide_core or pyodide.ffi gives no code and no Node", async () => {
    const result = await run({
      limits: { cpuSeconds: 5, wallMs: 10_000 },
      source: `
import sys
for name in [k for k, v in list(sys.modules.items()) if v is None]:
    del sys.modules[name]
def attempt(name, fn):
    try:
        print("ESCAPED", name, repr(fn())[:200])
    except BaseException as err:
        print("blocked", name, type(err).__name__)
def via_core():
    import _pyodide_core
    return _pyodide_core.to_js([1]).constructor.constructor("return process")().env
def via_ffi():
    import pyodide.ffi
    return pyodide.ffi.to_js([1])
def via_js():
    import js
    return js.process
def via_code():
    import pyodide.code
    return pyodide.code.run_js("process.env")
def via_ctypes():
    import ctypes
    return ctypes.CDLL(None).emscripten_run_script_int(b"process.exit(7)")
for name, fn in [("core", via_core), ("ffi", via_ffi), ("js", via_js), ("code", via_code)]:
    attempt(name, fn)
print("done")`,
    });
    expect(result.verdict, result.stderr).toBe("ok");
    const out = result.stdout.trimEnd().split("\n");
    expect(out.join("\n")).not.toContain("ESCAPED");
    expect(out.at(-1)).toBe("done");
    // ctypes reaches Emscripten's eval, which the child cannot run: the interpreter dies, nothing more.
    const viaCtypes = await run({
      source:
        "import sys\nsys.modules.pop('ctypes'); sys.modules.pop('_ctypes')\nimport ctypes\nctypes.CDLL(None).emscripten_run_script_int(b'process.exit(7)')",
    });
    expect(viaCtypes.verdict).toBe("error");
    expect(viaCtypes.stderr).toContain("Code generation from strings disallowed");
  });

  it("mounts nothing of the host, even through the Emscripten file system", async () => {
    const out = await lines(`
import os
print(sorted(os.listdir("/")))
print([m for m in open("/proc/mounts").read().splitlines()] if os.path.exists("/proc/mounts") else "no mounts file")
print(os.path.exists("${dataDir}"), os.path.exists("/work"), os.path.exists("/etc"))`);
    expect(out[0]).toBe("['dev', 'home', 'job', 'lib', 'proc', 'scratch', 'tmp']");
    expect(out[2]).toBe("False False False");
  });

  it("runs its interpreters under Node's permission model: no files, processes, workers or eval", () => {
    const dir = `${pyodideDir()}/`;
    const probe = (code: string) =>
      spawnSync(process.execPath, [...permissionFlags(dir), "-e", code], { encoding: "utf8", env: {} });
    for (const code of [
      "require('fs').readFileSync('/etc/passwd')",
      `require('fs').readFileSync(${JSON.stringify(join(dataDir, "admin.key"))})`,
      `require('fs').writeFileSync(${JSON.stringify(join(dataDir, "planted"))}, 'x')`,
      "require('child_process').spawnSync('true')",
      "new (require('worker_threads').Worker)('1', { eval: true })",
      "new Function('return 1')()",
    ]) {
      const r = probe(code);
      expect(r.status, code).not.toBe(0);
      expect(r.stderr, code).toMatch(/ERR_ACCESS_DENIED|Code generation from strings disallowed/);
    }
    expect(existsSync(join(dataDir, "planted"))).toBe(false);
    expect(probe(`require('fs').readFileSync(${JSON.stringify(join(dir, "package.json"))})`).status).toBe(0);
  });

  it("caps the heap: a memory bomb ends as memory with the child's memory bounded", async () => {
    // The peak RSS (VmHWM) of every WebAssembly child of this process, sampled while the bomb runs.
    const peaks = new Map<string, number>();
    const sample = () => {
      for (const pid of readdirSync("/proc")) {
        if (!/^\d+$/.test(pid) || parentOf(Number(pid)) !== process.pid) continue;
        try {
          if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--experimental-permission")) continue;
          const kb = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
          peaks.set(pid, Math.max(peaks.get(pid) ?? 0, kb * 1024));
        } catch {
          // Gone.
        }
      }
    };
    const timer = setInterval(sample, 5);
    const result = await run({
      source: HOSTILE.memoryBomb?.source ?? "",
      limits: { memoryBytes: 128 * 1024 * 1024 },
    }).finally(() => clearInterval(timer));
    expect(result.verdict).toBe("memory");
    expect(result.stderr).toContain("MemoryError");
    const peak = Math.max(0, ...peaks.values());
    console.log(`memory bomb under a 128 MiB heap: the child's peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB`);
    // A booted child's own memory (about 155 MB) plus the 128 MiB heap, with room: a bomb that
    // escaped the cap would grow toward the 4 GiB of 32-bit WebAssembly.
    expect(peak).toBeGreaterThan(128 * 2 ** 20);
    expect(peak).toBeLessThan(384 * 2 ** 20);
  });

  it("a program that kills or hangs its interpreter leaves the next program unaffected, and no child behind", async () => {
    const before = wasmChildren();
    expect((await run({ source: "while True:\n    pass" })).verdict).toBe("timeout");
    expect((await run({ source: "print(PARAMS[0])", params: [5], expect: "5" })).verdict).toBe("ok");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(wasmChildren()).toBeLessThanOrEqual(Math.max(before, 2));
  });
});
