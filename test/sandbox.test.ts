import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxPool } from "../gpu-node/sandbox/pool.js";
import { type ProgramJob, type ProgramResult, Sandbox, type Verdict } from "../gpu-node/sandbox/sandbox.js";
import { DomainError } from "../shared/errors.js";
import { NO_SANDBOX_REASON, skipWithoutSandbox } from "./helpers/sandbox.js";

// Small limits keep hostile programs fast; the defaults are tested for shape only.
const LIMITS = { cpuSeconds: 1, wallMs: 2000, scratchBytes: 4 * 1024 * 1024, processes: 16 };
const MARKER = `kvgraft-marker-${randomUUID()}`;
process.env.KVGRAFT_SANDBOX_TEST_MARKER = MARKER;

/** Programs that must not get their way, with the verdict each must get. */
const HOSTILE: Record<string, { source: string; verdicts: Verdict[] }> = {
  infiniteLoop: { source: "while True:\n    pass", verdicts: ["timeout"] },
  hugePower: { source: "print(pow(10**7, 10**7) % 7)", verdicts: ["timeout", "memory"] },
  memoryBomb: { source: "hoard = []\nwhile True:\n    hoard.append(bytearray(10**6))", verdicts: ["memory"] },
  forkBomb: { source: "import os\nwhile True:\n    os.fork()", verdicts: ["error", "timeout"] },
  gigabyteOutput: {
    source: "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)",
    verdicts: ["output_limit"],
  },
  sleeper: { source: "import time\ntime.sleep(60)", verdicts: ["timeout"] },
};

/** Host processes that belong to a job: its program, or anything carrying the test's marker. */
function jobProcesses(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (cmdline.includes("/job/main.py") || cmdline.includes(MARKER)) found.push(`${pid} ${cmdline}`);
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

let workDir: string;
let dataDir: string;
let sandbox: Sandbox;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), "kvgraft-sandbox-test-work-"));
  dataDir = mkdtempSync(join(tmpdir(), "kvgraft-sandbox-test-data-"));
  writeFileSync(join(dataDir, "block.json"), `{"secret":"${MARKER}"}`);
  writeFileSync(join(dataDir, "admin.key"), MARKER, { mode: 0o600 });
  if (!NO_SANDBOX_REASON) sandbox = await Sandbox.create({ limits: LIMITS, workDir });
});

afterAll(() => {
  rmSync(workDir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

async function run(job: ProgramJob): Promise<ProgramResult> {
  return sandbox.run(job);
}

/** Runs `source` and returns its stdout lines, checking that it ended well. */
async function lines(source: string): Promise<string[]> {
  const result = await run({ source });
  expect(result.verdict, result.stderr).toBe("ok");
  return result.stdout.trimEnd().split("\n");
}

describe.runIf(NO_SANDBOX_REASON !== null)("without bubblewrap", () => {
  it("refuses to run programs, saying what to install", async () => {
    await expect(Sandbox.create({ workDir })).rejects.toMatchObject({
      status: 503,
      code: "sandbox_unavailable",
      message: expect.stringContaining("install bubblewrap"),
    });
  });
});

describe("sandbox", () => {
  skipWithoutSandbox();

  it("runs under bubblewrap and says so in every verdict", async () => {
    expect(sandbox.isolation).toBe("bwrap");
    const result = await run({
      source: "with open('note.txt', 'w') as f:\n    f.write('17')\nprint(open('note.txt').read())",
      expect: "17",
    });
    expect(result).toMatchObject({ verdict: "ok", exitCode: 0, answer: "17", stdout: "17\n", stderr: "" });
    expect(result.isolation).toBe("bwrap");
    expect(result.cpuMs).toBeGreaterThan(0);
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

  it("reports a crash as error with its traceback", async () => {
    const result = await run({ source: "print('partial')\nraise ValueError('boom')", expect: "partial" });
    expect(result).toMatchObject({ verdict: "error", exitCode: 1 });
    expect(result.stderr).toContain("ValueError: boom");
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
    await expect(run({ source: "print(1)", limits: { cpuSeconds: 0 } })).rejects.toBeInstanceOf(DomainError);
  });
});

describe("hostile programs", () => {
  skipWithoutSandbox();

  for (const [name, { source, verdicts }] of Object.entries(HOSTILE)) {
    it(`${name} gets ${verdicts.join(" or ")}`, async () => {
      const result = await run({ source, expect: "1" });
      expect(verdicts).toContain(result.verdict);
      expect(result.wallMs).toBeLessThan(LIMITS.wallMs + 2000);
      expect(result.stdout.length).toBeLessThanOrEqual(64 * 1024);
      expect(jobProcesses()).toEqual([]);
    });
  }

  it("stops a gigabyte of output at the cap, fast", async () => {
    const result = await run(HOSTILE.gigabyteOutput as ProgramJob);
    expect(result.verdict).toBe("output_limit");
    expect(result.stdout.length).toBe(64 * 1024);
    expect(result.wallMs).toBeLessThan(2000);
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

describe("pool", () => {
  skipWithoutSandbox();

  it("runs 50 mixed jobs in parallel with correct verdicts and no cross-talk", async () => {
    const pool = new SandboxPool(sandbox, { concurrency: 4, maxQueued: 50 });
    const hostile = Object.values(HOSTILE);
    const jobs: { job: ProgramJob; verdicts: Verdict[]; token?: string }[] = [];
    for (let i = 0; i < 50; i++) {
      const bad = hostile[i % hostile.length];
      if (i % 5 === 4 && bad) {
        // Sleeps end by the wall clock; keep it short so the suite stays fast.
        jobs.push({ job: { source: bad.source, limits: { wallMs: 1500 } }, verdicts: bad.verdicts });
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

  it("sheds: a full queue is a 429, a long wait a 503, both with Retry-After; an aborted wait never runs", async () => {
    const pool = new SandboxPool(sandbox, { concurrency: 1, maxQueued: 1, maxWaitMs: 300, retryAfterS: 2 });
    const nap = { source: "import time\ntime.sleep(1)\nprint(1)" };
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
