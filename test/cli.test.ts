/**
 * The command line as a user meets it, through the real CLI (`node --import tsx cli/main.ts`):
 * every command and subcommand answers --help with its usage (exit 0), --version prints
 * package.json's version, and each common mistake prints one line saying what is wrong and what to
 * do (exit 2, no stack trace). An internal error is one line too; --verbose adds its stack.
 */
import {
  copyFileSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import type { AddressInfo } from "node:net";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { syntheticModel } from "./helpers/models.js";

const root = join(import.meta.dirname, "..");
const STACK_LINE = /^\s+at .+/m;

/**
 * Every command and subcommand a user can ask for help, found from the code, not listed by hand:
 * the command modules in cli/commands/ (`<group>-<sub>.ts` holds a subcommand of `<group>.ts`),
 * and each group's subcommands as its dispatcher names them for an unknown one ("available: ...").
 */
function helpCases(): string[][] {
  const modules = readdirSync(join(root, "cli", "commands"))
    .filter((f) => f.endsWith(".ts"))
    .map((f) => f.slice(0, -3));
  const groupOf = (name: string) => modules.find((m) => name.startsWith(`${m}-`));
  const commands = modules.filter((m) => !groupOf(m));
  const cases: string[][] = [];
  for (const name of commands) {
    cases.push([name]);
    if (!modules.some((m) => groupOf(m) === name)) continue;
    const r = runCli([name, "no-such-subcommand"]);
    const available = /\(available: ([^)]+)\)/.exec(r.stderr)?.[1];
    if (r.status !== 2 || !available) throw new Error(`kvgraft ${name} names no subcommands: ${r.stderr}`);
    const subs = available.split(", ");
    // A subcommand's own module is one its group dispatches to.
    for (const m of modules.filter((m) => groupOf(m) === name)) {
      const sub = m.slice(name.length + 1);
      if (!subs.includes(sub)) throw new Error(`cli/commands/${m}.ts: kvgraft ${name} does not list ${sub}`);
    }
    for (const sub of subs) cases.push([name, sub]);
  }
  return cases;
}

const HELP_CASES = helpCases();

let dir: string;
let notGguf: string;
let truncatedModel: string;
let emptyPathDir: string;
let busy: Server;
let busyPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-cli-"));
  notGguf = join(dir, "notes.txt");
  writeFileSync(notGguf, "not a model\n");
  // A GGUF whose header is intact but whose tensor data is cut off: the engine fails to load it.
  truncatedModel = join(dir, "truncated.gguf");
  copyFileSync(syntheticModel("tiny-llama"), truncatedModel);
  truncateSync(truncatedModel, Math.floor(statSync(truncatedModel).size * 0.6));
  emptyPathDir = mkdtempSync(join(tmpdir(), "kvgraft-cli-path-"));
  busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
  busyPort = (busy.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => busy.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
  rmSync(emptyPathDir, { recursive: true, force: true });
});

describe("kvgraft --help and --version", () => {
  it("top-level help lists every command and subcommand", () => {
    const r = runCli(["--help"]);
    expect(r.status).toBe(0);
    // Groups (bench, serve, eval) are listed by their subcommands.
    const listed = HELP_CASES.filter(
      (words) => !HELP_CASES.some((c) => c.length > words.length && c[0] === words[0]),
    );
    // The command lines, between "commands:" and the blank line: each command once, no other.
    const commandLines = r.stdout.split("\n\n")[1]?.split("\n").slice(1) ?? [];
    const names = commandLines.map((l) => l.trim().split(/ {2,}/)[0]);
    expect([...names].sort()).toEqual(listed.map((words) => words.join(" ")).sort());
    // The README's command table has a row for each.
    const readme = readFileSync(join(root, "README.md"), "utf8");
    expect(listed.filter((words) => !readme.includes(`\n| \`kvgraft ${words.join(" ")}`))).toEqual([]);
    expect(r.stdout).toContain("--version");
    // Every summary starts in one column, the general lines' included.
    const rows = r.stdout.split("\n").filter((l) => / {2,}\S/.test(l.trimStart()));
    const columns = new Set(rows.map((l) => l.length - l.trimStart().replace(/^\S+( \S+)* {2,}/, "").length));
    expect(rows.length).toBeGreaterThan(listed.length);
    expect([...columns]).toHaveLength(1);
  });

  it.for(HELP_CASES.map((words) => words.join(" ")))("kvgraft %s --help exits 0 with its usage", (name) => {
    const r = runCli([...name.split(" "), "--help"]);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: "" });
    expect(r.stdout).toMatch(new RegExp(`^usage: kvgraft ${name}`));
  });

  it("--version prints package.json's version", () => {
    const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
    const r = runCli(["--version"]);
    expect({ status: r.status, stdout: r.stdout }).toEqual({ status: 0, stdout: `${version}\n` });
  });
});

interface Mistake {
  name: string;
  args: () => string[];
  env?: () => Record<string, string>;
  /** The one line on stderr (after `kvgraft <command>: `). */
  line: () => RegExp;
  /** Commands that start work first (a model load) log progress lines besides the error line. */
  progressFirst?: boolean;
}

const MISTAKES: Mistake[] = [
  {
    name: "verify --model with a missing file",
    args: () => ["verify", "--model", "missing.gguf"],
    line: () => /^kvgraft verify: --model missing\.gguf does not exist; give the path of a GGUF model file$/,
  },
  {
    name: "verify --model with a file that is not GGUF",
    args: () => ["verify", "--model", notGguf],
    line: () => /^kvgraft verify: --model .*notes\.txt is not a GGUF model file .*; give a \.gguf model/,
  },
  {
    name: "bench graft --model with a missing file",
    args: () => ["bench", "graft", "--model", "missing.gguf"],
    line: () => /^kvgraft bench graft: --model missing\.gguf does not exist/,
  },
  {
    name: "bench scale-out with fewer --devices than nodes",
    args: () => ["bench", "scale-out", "--nodes", "2", "--devices", "0"],
    line: () => /^kvgraft bench scale-out: --devices names 1 devices for 2 nodes/,
  },
  {
    name: "synth-model --out in a folder that does not exist",
    args: () => ["synth-model", "--preset", "tiny-llama", "--out", "/nonexistent/x.gguf"],
    line: () =>
      /^kvgraft synth-model: --out \/nonexistent\/x\.gguf: the folder \/nonexistent does not exist; create it/,
  },
  {
    name: "sandbox --file that does not exist",
    args: () => ["sandbox", "--file", "/nonexistent/p.py"],
    line: () => /^kvgraft sandbox: --file \/nonexistent\/p\.py does not exist; check the path$/,
  },
  {
    name: "serve edge with a short KVGRAFT_GPU_SECRET (the name said once)",
    args: () => ["serve", "edge", "--port", "0"],
    env: () => ({ KVGRAFT_GPU_SECRET: "short" }),
    line: () =>
      /^kvgraft serve edge: invalid edge configuration: KVGRAFT_GPU_SECRET: must be at least 16 characters /,
  },
  {
    name: "an unknown flag",
    args: () => ["bench", "edge", "--bogus"],
    line: () => /^kvgraft bench edge: Unknown option '--bogus' \(see kvgraft bench edge --help\)$/,
  },
  {
    name: "an unknown command",
    args: () => ["nonsense"],
    line: () => /^kvgraft: unknown command 'nonsense' \(see kvgraft --help\)$/,
  },
  {
    name: "flywheel without a GPU node",
    args: () => ["flywheel", "--once"],
    env: () => ({ KVGRAFT_GPU_URL: "", KVGRAFT_GPU_SECRET: "" }),
    line: () => /^kvgraft flywheel: no GPU node given: pass --gpu-url URL/,
  },
  {
    name: "flywheel without its secret",
    args: () => ["flywheel", "--once", "--gpu-url", "http://127.0.0.1:9"],
    env: () => ({ KVGRAFT_GPU_SECRET: "" }),
    line: () =>
      /^kvgraft flywheel: KVGRAFT_GPU_SECRET is not set: set it to the secret the GPU node runs with/,
  },
  {
    name: "npm start with a MODEL_PATH that does not exist",
    args: () => ["start", "--data-dir", join(dir, "start")],
    env: () => ({ MODEL_PATH: "/nonexistent/model.gguf" }),
    line: () => /^kvgraft start: MODEL_PATH \/nonexistent\/model\.gguf does not exist/,
  },
  {
    name: "npm start with a MODEL_PATH that is not a model",
    args: () => ["start", "--data-dir", join(dir, "start")],
    env: () => ({ MODEL_PATH: notGguf }),
    line: () => /^kvgraft start: MODEL_PATH .*notes\.txt is not a GGUF model file/,
  },
  {
    name: "npm start with the GPU port in use",
    args: () => ["start", "--data-dir", join(dir, "start")],
    env: () => ({ MODEL_PATH: "", GPU_PORT: String(busyPort), EDGE_PORT: "0" }),
    line: () =>
      new RegExp(
        `^kvgraft start: 127\\.0\\.0\\.1:${busyPort} is already in use by pid ${process.pid} \\(.+\\); stop that process, or set GPU_PORT to another port$`,
      ),
  },
  {
    name: "npm start with the edge port in use",
    args: () => ["start", "--data-dir", join(dir, "start")],
    env: () => ({ MODEL_PATH: "", GPU_PORT: "0", EDGE_PORT: String(busyPort) }),
    line: () =>
      new RegExp(
        `^kvgraft start: 127\\.0\\.0\\.1:${busyPort} is already in use by pid ${process.pid} .*set PORT \\(or EDGE_PORT\\)`,
      ),
  },
  {
    name: "serve gpu on a port in use",
    args: () => [
      "serve",
      "gpu",
      "--model",
      syntheticModel("tiny-llama"),
      "--port",
      String(busyPort),
      "--data-dir",
      join(dir, "gpu"),
      "--no-sandbox",
    ],
    env: () => ({ KVGRAFT_GPU_SECRET: "cli-test-secret-0123456789" }),
    line: () =>
      new RegExp(`^kvgraft serve gpu: 127\\.0\\.0\\.1:${busyPort} is already in use by pid ${process.pid} `),
    progressFirst: true,
  },
  {
    name: "serve edge on a port in use",
    args: () => ["serve", "edge", "--port", String(busyPort), "--db", `file:${join(dir, "edge.db")}`],
    env: () => ({ KVGRAFT_GPU_URL: "", KVGRAFT_ADMIN_KEY: "" }),
    line: () =>
      new RegExp(
        `^kvgraft serve edge: 127\\.0\\.0\\.1:${busyPort} is already in use by pid ${process.pid} .*; stop that process`,
      ),
  },
  {
    // The default sandbox (WebAssembly) needs nothing on PATH; the bubblewrap backend needs python3.
    name: "KVGRAFT_SANDBOX=bwrap without python3 (eval router runs programs in the sandbox)",
    args: () => [
      "eval",
      "router",
      "--library",
      join(root, "test", "fixtures", "router-library.jsonl"),
      "--queries",
      join(root, "test", "fixtures", "router-queries.jsonl"),
    ],
    env: () => ({ PATH: emptyPathDir, KVGRAFT_SANDBOX: "bwrap" }),
    line: () =>
      /^kvgraft eval router: the sandbox needs Python 3: 'python3' was not found on PATH; install python3/,
  },
];

describe("a user's mistake is one line, exit code 2, no stack trace", () => {
  it.for(MISTAKES)("$name", (mistake) => {
    const r = runCli(mistake.args(), mistake.env?.() ?? {});
    const lines = r.stderr.trimEnd().split("\n");
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).not.toMatch(STACK_LINE);
    if (mistake.progressFirst) {
      // The engine logs asynchronously, so its lines may come after ours: find ours.
      const own = lines.filter((line) => line.startsWith("kvgraft"));
      expect(own).toHaveLength(1);
      expect(own[0]).toMatch(mistake.line());
    } else {
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(mistake.line());
    }
  });
});

describe("an internal error", () => {
  it("is one line that points to --verbose (exit 1)", () => {
    const r = runCli(["verify", "--model", truncatedModel, "--trials", "1", "--tokens", "8"]);
    expect(r.status).toBe(1);
    expect(r.stderr).not.toMatch(STACK_LINE);
    // The engine's own log lines come first or after (it logs asynchronously); ours is one line.
    expect(r.stderr.split("\n").filter((line) => line.startsWith("kvgraft"))).toEqual([
      expect.stringMatching(
        /^kvgraft verify: internal error: .+ \(run it again with --verbose for the stack trace\)$/,
      ),
    ]);
  });

  it("keeps its stack trace behind --verbose", () => {
    const r = runCli(["verify", "--model", truncatedModel, "--trials", "1", "--tokens", "8", "--verbose"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^kvgraft verify: internal error: /m);
    expect(r.stderr).toMatch(STACK_LINE);
  });
});
