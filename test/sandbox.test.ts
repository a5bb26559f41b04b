import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxPool } from "../gpu-node/sandbox/pool.js";
import { type ProgramJob, type ProgramResult, Sandbox, type Verdict } from "../gpu-node/sandbox/sandbox.js";
import { DomainError } from "../shared/errors.js";

// Small limits keep hostile programs fast; the defaults are tested for shape only.
const LIMITS = { cpuSeconds: 1, wallMs: 2000 };
const MARKER = `kvgraft-marker-${randomUUID()}`;
process.env.KVGRAFT_SANDBOX_TEST_MARKER = MARKER;

/** Programs that must not get their way, with the verdict each must get. */
const HOSTILE: Record<string, { source: string; verdicts: Verdict[]; forks?: true }> = {
  infiniteLoop: { source: "while True:\n    pass", verdicts: ["timeout"] },
  hugePower: { source: "print(pow(10**7, 10**7) % 7)", verdicts: ["timeout", "memory"] },
  memoryBomb: { source: "hoard = []\nwhile True:\n    hoard.append(bytearray(10**6))", verdicts: ["memory"] },
  forkBomb: { source: "import os\nwhile True:\n    os.fork()", verdicts: ["error", "timeout"], forks: true },
  gigabyteOutput: {
    source: "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)",
    verdicts: ["output_limit"],
  },
  sleeper: { source: "import time\ntime.sleep(60)", verdicts: ["timeout"] },
};

const bubblewrapInstalled = (() => {
  try {
    execFileSync("bwrap", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** Uids the sandbox hands out as root (see isolation.ts): any process left with one is a leak. */
function sandboxUidProcesses(): number[] {
  const leaked: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${entry}/status`, "utf8"))?.[1]);
      if (uid >= 2 ** 30 && uid < 2 ** 30 + 2 ** 28) leaked.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return leaked;
}

let workDir: string;
let hostDir: string;
let sandbox: Sandbox;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), "kvgraft-sandbox-test-work-"));
  hostDir = mkdtempSync(join(tmpdir(), "kvgraft-sandbox-test-blocks-"));
  writeFileSync(join(hostDir, "block.json"), `{"secret":"${MARKER}"}`);
  sandbox = await Sandbox.create({ limits: LIMITS, workDir });
});

afterAll(() => {
  rmSync(workDir, { recursive: true, force: true });
  rmSync(hostDir, { recursive: true, force: true });
});

async function run(job: ProgramJob): Promise<ProgramResult> {
  return sandbox.run(job);
}

describe("sandbox", () => {
  it("uses bubblewrap where it is installed, with a process limit per job", () => {
    expect(sandbox.isolation).toBe(bubblewrapInstalled ? "bwrap" : expect.any(String));
    if (sandbox.isolation === "bwrap") expect(sandbox.limitsProcesses).toBe(true);
  });

  it("runs a good program and removes its job directory", async () => {
    const result = await run({
      source: "with open('note.txt', 'w') as f:\n    f.write('17')\nprint(open('note.txt').read())",
      expect: "17",
    });
    expect(result).toMatchObject({ verdict: "ok", exitCode: 0, answer: "17", stdout: "17\n", stderr: "" });
    expect(result.isolation).toBe(sandbox.isolation);
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
  for (const [name, { source, verdicts, forks }] of Object.entries(HOSTILE)) {
    it(`${name} gets ${verdicts.join(" or ")}`, async (ctx) => {
      // Without a per-job process count a fork bomb would hit the host itself.
      if (forks && !sandbox.limitsProcesses) ctx.skip();
      const result = await run({ source, expect: "1" });
      expect(verdicts).toContain(result.verdict);
      expect(result.wallMs).toBeLessThan(LIMITS.wallMs + 2000);
      expect(result.stdout.length).toBeLessThanOrEqual(64 * 1024);
    });
  }

  it("stops a gigabyte of output at the cap, fast", async () => {
    const result = await run(HOSTILE.gigabyteOutput as ProgramJob);
    expect(result.verdict).toBe("output_limit");
    expect(result.stdout.length).toBe(64 * 1024);
    expect(result.wallMs).toBeLessThan(2000);
  });

  it("leaves no process behind after a fork bomb, and the next job runs", async (ctx) => {
    if (!sandbox.limitsProcesses) ctx.skip();
    const spinning = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass";
    const result = await run({ source: spinning });
    expect(["timeout", "error"]).toContain(result.verdict);
    expect(sandboxUidProcesses()).toEqual([]);
    const after = await run({ source: "print(6 * 7)", expect: "42" });
    expect(after.verdict).toBe("ok");
  });

  it("cannot read /etc/passwd or a host directory", async () => {
    const source = `
import os
for path in ["/etc/passwd", ${JSON.stringify(join(hostDir, "block.json"))}, ${JSON.stringify(join(process.cwd(), "package.json"))}]:
    try:
        print("READ", path, open(path).read())
    except OSError as err:
        print("blocked", path, type(err).__name__)
print("listing", sorted(os.listdir("/")))`;
    const result = await run({ source });
    expect(result.verdict).toBe("ok");
    expect(result.stdout).not.toContain("READ");
    expect(result.stdout).not.toContain(MARKER);
    expect(result.stdout.match(/^blocked /gm)).toHaveLength(3);
  });

  it("sees none of the parent's environment", async () => {
    const result = await run({ source: "import json, os\nprint(json.dumps(dict(os.environ)))" });
    expect(result.verdict).toBe("ok");
    expect(result.stdout).not.toContain(MARKER);
    const env = JSON.parse(result.answer ?? "null") as Record<string, string>;
    expect(Object.keys(env).filter((key) => key !== "LC_CTYPE")).toEqual([]);
  });

  it("cannot write outside its scratch directory", async () => {
    const targets = [join(hostDir, "planted.txt"), "/usr/planted.txt", "/planted.txt", "/job/main.py"];
    const source = `
for path in ${JSON.stringify(targets)}:
    try:
        with open(path, "a") as f:
            f.write("planted")
        print("WROTE", path)
    except OSError as err:
        print("blocked", path, type(err).__name__)`;
    const result = await run({ source });
    expect(result.verdict).toBe("ok");
    expect(result.stdout).not.toContain("WROTE");
    expect(existsSync(join(hostDir, "planted.txt"))).toBe(false);
    expect(existsSync("/usr/planted.txt")).toBe(false);
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
      const source = `
import socket
for host, port in [("127.0.0.1", ${port}), ("1.1.1.1", 80), ("8.8.8.8", 53)]:
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, port))
        print("CONNECTED", host)
    except OSError as err:
        print("blocked", host, err.errno)`;
      const result = await run({ source });
      expect(result.verdict).toBe("ok");
      expect(result.stdout).not.toContain("CONNECTED");
      expect(result.stdout.match(/^blocked /gm)).toHaveLength(3);
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });
});

describe("pool", () => {
  it("runs 50 mixed jobs in parallel with correct verdicts and no cross-talk", async () => {
    const pool = new SandboxPool(sandbox, 4);
    const usable = Object.values(HOSTILE).filter((hostile) => sandbox.limitsProcesses || !hostile.forks);
    const jobs: { job: ProgramJob; verdicts: Verdict[]; token?: string }[] = [];
    for (let i = 0; i < 50; i++) {
      if (i % 5 === 4) {
        const hostile = usable[i % usable.length];
        if (!hostile) throw new Error("no hostile program");
        // Sleeps end by the wall clock; keep it short so the suite stays fast.
        jobs.push({ job: { source: hostile.source, limits: { wallMs: 1500 } }, verdicts: hostile.verdicts });
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
    expect(pool.load).toEqual({ running: 0, queued: 0 });
    expect(readdirSync(workDir)).toEqual([]);
  });

  it("refuses jobs beyond its queue with 429", async () => {
    const pool = new SandboxPool(sandbox, 1, 1);
    const nap = { source: "import time\ntime.sleep(0.3)\nprint(1)" };
    const first = pool.runProgram(nap);
    const second = pool.runProgram(nap);
    await expect(pool.runProgram(nap)).rejects.toMatchObject({ status: 429, code: "sandbox_busy" });
    expect((await first).verdict).toBe("ok");
    expect((await second).verdict).toBe("ok");
  });
});

describe.each(["unshare", "rlimits"] as const)("forced %s isolation", (mode) => {
  let weak: Sandbox;
  beforeAll(async () => {
    weak = await Sandbox.create({ isolation: mode, limits: LIMITS, workDir });
  });

  it("reports its mode and still runs good programs with an empty environment", async () => {
    const result = await weak.run({
      source: "import os\nprint(len([k for k in os.environ if k != 'LC_CTYPE']))",
      expect: "0",
    });
    expect(result).toMatchObject({ verdict: "ok", isolation: mode });
  });

  it.each(["infiniteLoop", "memoryBomb", "gigabyteOutput", "sleeper"])(
    "enforces limits: %s",
    async (name) => {
      const hostile = HOSTILE[name];
      if (!hostile) throw new Error(name);
      const result = await weak.run({ source: hostile.source, limits: { wallMs: 1500 } });
      expect(hostile.verdicts).toContain(result.verdict);
      expect(result.wallMs).toBeLessThan(3500);
    },
  );

  it("kills what the program leaves running when it exits", async () => {
    const source =
      "import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(30)\n    os._exit(0)\nprint(pid)";
    const result = await weak.run({ source });
    expect(result.verdict).toBe("ok");
    if (mode === "rlimits") {
      // Without a pid namespace the printed pid is a host pid: it must be gone (or a reaped zombie).
      await new Promise((resolve) => setTimeout(resolve, 200));
      const status = existsSync(`/proc/${result.answer}/status`)
        ? readFileSync(`/proc/${result.answer}/status`, "utf8")
        : "";
      expect(status === "" || /^State:\s+Z/m.test(status)).toBe(true);
    }
    expect(result.wallMs).toBeLessThan(3000);
  });
});
