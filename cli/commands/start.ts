/**
 * `kvgraft start` (`npm start`): the embedded default on one machine. Uses the embedded model
 * (models/kvgraft-math.gguf, trained here: docs/model.md) or MODEL_PATH, starts the GPU node as a child
 * process (`kvgraft serve gpu`, through the same node + tsx/dist entry as this process), starts
 * the edge on Node with a libSQL file in the data dir, deposits the starter library on first
 * start, and prints the URLs, the admin key and curl commands that work as printed.
 * Ctrl-C, SIGTERM or SIGHUP stops both; the GPU node also stops when this process dies (IPC).
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { readEdgeConfig } from "../../edge/config.js";
import { systemClock } from "../../edge/http.js";
import { type EdgeServer, startEdgeServer, waitForStopSignal } from "../../edge/runtime/node.js";
import { adminSolutionRequestSchema } from "../../edge/schemas.js";
import { depositSolution } from "../../edge/services/admin.service.js";
import { withFlywheelWorker } from "../../edge/services/flywheel-worker.js";
import { ISOLATION_TEXT } from "../../gpu-node/sandbox/choices.js";
import { DomainError } from "../../shared/errors.js";
import { healthSchema } from "../../shared/protocol.js";
import { EMBEDDED_MODEL } from "../../tools/model/spec.js";
import { kvgraftSameEntryArgs, readyUrl, supervise } from "../../tools/process/supervise.js";
import { requireGgufFile } from "../args.js";
import { command } from "../command.js";
import { inheritedEnv, readToolEnv } from "../config.js";
import { startLogSink } from "../log-sink.js";
import { packageRoot } from "../package-root.js";
import { ensurePortFree } from "../ports.js";

const HELP = `usage: kvgraft start [--data-dir DIR] [--json]

Runs the embedded default on this machine: a GPU node (child process) and the edge (this process).
  --data-dir DIR   model, blocks, database and admin key (default .data, or KVGRAFT_DATA_DIR)
  --json           print one JSON line {edgeUrl, gpuUrl, adminKey, ...} when ready
Environment: MODEL_PATH (a GGUF model; default the embedded one, models/kvgraft-math.gguf),
  PORT or EDGE_PORT (edge, default 8787), GPU_PORT (default 8788), KVGRAFT_GPU_SECRET (generated
  if unset), KVGRAFT_ADMIN_KEY (otherwise one is generated on first start and kept in DIR/admin.key),
  KVGRAFT_FLYWHEEL (on|off|auto; auto, the default, is on).
Stops both services on Ctrl-C, SIGTERM or SIGHUP (a closed terminal); the GPU node also stops
  when this process dies.`;

const GPU_READY_TIMEOUT_MS = 300_000;
/** `npm start`'s solve budget unless KVGRAFT_SOLVE_MAX_TOKENS is set. */
const EMBEDDED_SOLVE_MAX_TOKENS = 1024;
const GPU_STOP_TIMEOUT_MS = 10_000;
/** The GPU node listens on loopback only: the edge in this process is its one client. */
const GPU_HOST = "127.0.0.1";

const starterEntrySchema = adminSolutionRequestSchema.extend({ id: z.string() });

/** Quotes a string for a POSIX shell. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

export default command({ help: HELP, flags: { "data-dir": { type: "string" } } }, async (flags, out) => {
  const env = readToolEnv();
  const { say } = out;
  const dataDir = resolve(flags["data-dir"] ?? env.dataDir);
  const { gpuPort } = env;
  const secret = env.gpuSecret ?? randomBytes(32).toString("hex");
  // The edge's environment, validated before anything starts; the GPU node's URL joins it once
  // the node listens (one the environment names is not the one started here).
  const { KVGRAFT_GPU_URL: _notThisNode, ...inherited } = inheritedEnv();
  const edgeEnv = {
    ...inherited,
    LIBSQL_URL: env.libsqlUrl ?? `file:${join(dataDir, "kvgraft.db")}`,
    KVGRAFT_GPU_SECRET: secret,
    // The embedded model's final part (a program of up to ~60 tokens) needs 1,024 tokens over
    // 4 samples: 256 (the edge's own default) leaves 32 tokens for it.
    KVGRAFT_SOLVE_MAX_TOKENS: inherited.KVGRAFT_SOLVE_MAX_TOKENS ?? String(EMBEDDED_SOLVE_MAX_TOKENS),
  };
  const { listen: edgeListen, logLevel } = readEdgeConfig(edgeEnv);

  // 1. The model.
  const embeddedModel = env.modelPath === undefined;
  const modelPath = requireGgufFile(
    env.modelPath ? resolve(env.modelPath) : join(packageRoot(), EMBEDDED_MODEL),
    env.modelPath ? "MODEL_PATH" : "the embedded model",
  );
  mkdirSync(dataDir, { recursive: true });
  // A busy port (often an earlier kvgraft still running) is one line naming its holder, found
  // before anything starts.
  await ensurePortFree(GPU_HOST, gpuPort, "stop that process, or set GPU_PORT to another port");
  await ensurePortFree(
    edgeListen.host,
    edgeListen.port,
    "stop that process, or set PORT (or EDGE_PORT) to another port",
  );

  // Both services' JSON log lines go to a file; the terminal gets a readable line per event that
  // matters (cli/log-sink.ts).
  const logs = startLogSink(join(dataDir, "kvgraft.log"), logLevel, (line) =>
    process.stderr.write(`${line}\n`),
  );

  // From here on SIGINT, SIGTERM and SIGHUP (a closed terminal) stop both services, also while
  // they start.
  const stop: { signal: NodeJS.Signals | null } = { signal: null };
  const stopSignal = waitForStopSignal().then((signal) => {
    stop.signal = signal;
    return signal;
  });

  // 2. The GPU node, as a child process through the same entry as this one.
  // The model goes by --model; an empty MODEL_PATH would fail the node's own validation.
  const { MODEL_PATH: _model, ...childEnv } = inheritedEnv();
  say(`starting the GPU node on port ${gpuPort} ...`);
  const gpu = supervise({
    name: "the GPU node",
    args: kvgraftSameEntryArgs(
      ...["serve", "gpu", "--model", modelPath, "--host", GPU_HOST, "--port", String(gpuPort)],
      ...["--data-dir", join(dataDir, "gpu"), "--json"],
      ...(process.argv.includes("--verbose") ? ["--verbose"] : []),
    ),
    // libuv's pool runs the engine build's parallel chunk reads and hashes; its default of 4
    // leaves the disk idle while chunks are hashed.
    env: { UV_THREADPOOL_SIZE: "16", ...childEnv, KVGRAFT_GPU_SECRET: secret },
    ready: readyUrl,
    readyTimeoutMs: GPU_READY_TIMEOUT_MS,
    onStdoutLine: (line) => process.stderr.write(`[gpu] ${line}\n`),
    stderr: logs.gpuStderr,
    // Its own process group: a terminal's Ctrl-C or hangup reaches only this process, which then
    // sends the child exactly one SIGTERM (a second signal would cut the GPU node's drain short).
    detached: true,
    // The child notices through it that this process died, even by SIGKILL (cli/main.ts).
    ipc: true,
  });
  let edge: EdgeServer | null = null;
  try {
    const ready = await Promise.race([
      gpu.ready.then((url) => ({ url })),
      gpu.exited.then(({ code }) => ({ exitCode: code })),
      stopSignal.then((signal) => ({ signal })),
    ]);
    if ("signal" in ready) {
      say(`${ready.signal}: stopping the GPU node ...`);
      await gpu.stop(GPU_STOP_TIMEOUT_MS);
      return 0;
    }
    // The node said why on its stderr (one line for a mistake, exit code 2).
    if ("exitCode" in ready) {
      if (ready.exitCode === 2) return 2;
      throw new Error(`the GPU node exited before it was ready (${ready.exitCode ?? "no exit code"})`);
    }
    const gpuUrl = ready.url;
    const sandbox = await sandboxState(gpuUrl);

    // 3. The edge, in this process.
    edge = await startEdgeServer({
      env: { ...edgeEnv, KVGRAFT_GPU_URL: gpuUrl },
      context: { syntheticModel: false },
      logger: logs.logger,
    });
    edge = withFlywheelWorker(edge, { logger: logs.logger.child({ component: "flywheel" }) });
    const keyFile = join(dataDir, "admin.key");
    if (edge.generatedAdminKey) writeFileSync(keyFile, `${edge.generatedAdminKey}\n`, { mode: 0o600 });

    // 4. The starter library (already present entries are skipped: deposits are idempotent).
    const starter = await depositStarterLibrary(edge, say, () => stop.signal !== null);

    // 5. What to do next. The key file's path is absolute, so the examples work from any folder.
    const keyShell = edge.generatedAdminKey
      ? edge.generatedAdminKey
      : env.adminKey
        ? "$KVGRAFT_ADMIN_KEY"
        : existsSync(keyFile)
          ? `$(cat ${shellQuote(keyFile)})`
          : "$KVGRAFT_ADMIN_KEY";
    const summary = {
      edgeUrl: edge.url,
      consoleUrl: `${edge.url}/console`,
      gpuUrl,
      adminKey: edge.generatedAdminKey,
      dataDir,
      logFile: logs.path,
      model: modelPath,
      embeddedModel,
      sandbox,
      flywheel: { enabled: edge.config.flywheel.enabled, setting: edge.config.flywheel.setting },
      starter,
    };
    if (stop.signal === null) {
      if (out.json) out.result(summary);
      else
        printBanner(edge, gpuUrl, keyShell, keyFile, embeddedModel, modelPath, starter, sandbox, logs.path);
    }

    // 6. Run until a stop signal or the GPU node dies.
    const outcome = await Promise.race([
      stopSignal.then((signal) => ({ signal })),
      gpu.exited.then(({ code }) => ({ code: code ?? 1 })),
    ]);
    if ("code" in outcome) {
      say(`the GPU node exited (code ${outcome.code}); stopping the edge`);
      await edge.close();
      return 1;
    }
    say(`${outcome.signal}: stopping the edge and the GPU node ...`);
    await edge.close();
    await gpu.stop(GPU_STOP_TIMEOUT_MS);
    say("stopped");
    return 0;
  } catch (err) {
    await edge?.close();
    await gpu.stop(GPU_STOP_TIMEOUT_MS);
    throw err;
  } finally {
    logs.close();
  }
});

interface StarterOutcome {
  total: number;
  deposited: number;
  present: number;
  failed: { id: string; code: string; message: string }[];
  /** The first starter problem once it is in the library (deposited now or before), else null. */
  firstProblem: string | null;
}

/** Deposits every starter entry through the same code as POST /admin/solutions. */
async function depositStarterLibrary(
  edge: EdgeServer,
  say: (line: string) => void,
  stopping: () => boolean,
): Promise<StarterOutcome> {
  const file = join(packageRoot(), "edge", "starter-library.jsonl");
  const outcome: StarterOutcome = { total: 0, deposited: 0, present: 0, failed: [], firstProblem: null };
  if (!existsSync(file)) {
    say(`starter library ${file} not found; skipping`);
    return outcome;
  }
  const entries = readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => starterEntrySchema.parse(JSON.parse(l)));
  outcome.total = entries.length;
  const deps = { db: edge.db, gpu: edge.gpu, config: edge.config, clock: systemClock };
  for (const [i, { id, ...entry }] of entries.entries()) {
    if (stopping()) break;
    try {
      const r = await depositSolution(deps, entry);
      if (r.created) outcome.deposited++;
      else outcome.present++;
      if (i === 0) outcome.firstProblem = entry.problem;
      say(
        `starter library ${i + 1}/${entries.length}: ${id} ${r.created ? "deposited and verified" : "already present"}`,
      );
    } catch (err) {
      const code = err instanceof DomainError ? err.code : "error";
      const message = err instanceof Error ? err.message : String(err);
      outcome.failed.push({ id, code, message });
      say(`starter library ${i + 1}/${entries.length}: ${id} FAILED (${code}: ${message})`);
    }
  }
  return outcome;
}

type SandboxState = { isolation: string; reason?: string | undefined };

/** How a backend the node names isolates (ISOLATION_TEXT), or nothing for a name it does not know. */
function sandboxText(isolation: string): string {
  return isolation === "wasm" || isolation === "bwrap" ? ISOLATION_TEXT[isolation] : "unknown backend";
}

/** How many starter problems are in the library now, and why the others are not. */
function starterLine(s: StarterOutcome): string {
  const held = s.deposited + s.present;
  const present = s.present > 0 ? ` (${s.present} already present)` : "";
  const line = `${held}/${s.total} starter problems deposited and verified${present}`;
  if (s.failed.length === 0) return line;
  const codes = [...new Set(s.failed.map((f) => f.code))].join(", ");
  const first = s.failed[0];
  return `${line}; ${s.failed.length} NOT deposited (${codes}${first ? `: ${first.message}` : ""})`;
}

/** The GPU node's sandbox as its /health reports it, for the banner and the JSON summary. */
async function sandboxState(gpuUrl: string): Promise<SandboxState> {
  const health = healthSchema.parse(await (await fetch(`${gpuUrl}/health`)).json());
  return health.sandbox ?? { isolation: "none" };
}

function printBanner(
  edge: EdgeServer,
  gpuUrl: string,
  keyShell: string,
  keyFile: string,
  embeddedModel: boolean,
  modelPath: string,
  starter: StarterOutcome,
  sandbox: SandboxState,
  logFile: string,
): void {
  const { firstProblem } = starter;
  const auth = `-H "Authorization: Bearer ${keyShell}"`;
  const jsonHeader = `-H "Content-Type: application/json"`;
  const solveBody = JSON.stringify({
    problem:
      firstProblem ??
      "Sam buys 12 apples at $0.75 each and pays with a $20 bill. How much change does he get, in dollars?",
  });
  const uploadBody = JSON.stringify({
    problem: "A box holds 17 rows of 23 marbles. How many marbles are in the box?",
    solution: "There are 17 rows of 23 marbles, so 17 × 23 = 391 marbles.",
    program: "rows, per_row = PARAMS\nprint(rows * per_row)\n",
    answer: "391",
  });
  const solveCurl = `  curl -s ${edge.url}/v1/solve ${auth} ${jsonHeader} -d ${shellQuote(solveBody)}`;
  const libraryCurl = `  curl -s "${edge.url}/v1/library?limit=5" ${auth}`;
  // Without a sandbox, deposits, transfers and the model's solves answer 501: no example that
  // would, but why and what to do; a problem already in the library is still answered.
  const tryIt =
    sandbox.isolation === "none"
      ? [
          "The GPU node runs no programs (see sandbox above): deposits, transfers and the model's solves",
          "answer 501 sandbox_unavailable, and /health says degraded. Install what the reason names, or",
          "unset KVGRAFT_SANDBOX (the default runs CPython on WebAssembly, installed by npm ci), then start",
          "again.",
          ...(firstProblem
            ? ["Until then:", "  # a verified answer from the library (fast path: no GPU call)", solveCurl]
            : [
                `Nothing was deposited (${starter.total} starter problems need the sandbox to check their programs),`,
                "so the library is empty until then:",
              ]),
          "  # the library",
          libraryCurl,
        ]
      : [
          "Try it:",
          firstProblem
            ? "  # a verified answer from the library (fast path: no GPU call)"
            : "  # a question the model answers (the first starter problem is not in the library)",
          solveCurl,
          "  # the library",
          libraryCurl,
          "  # add a verified solution (its program runs in the sandbox first)",
          `  curl -s ${edge.url}/admin/solutions ${auth} ${jsonHeader} -d ${shellQuote(uploadBody)}`,
        ];
  const lines = [
    "",
    "kvgraft is running",
    `  edge      ${edge.url}   (API; OpenAPI at ${edge.url}/openapi.json, health at ${edge.url}/health)`,
    `  console   ${edge.url}/console   (web console: sign in with the admin key below, or a public key)`,
    `  GPU node  ${gpuUrl}   (signed requests only)`,
    `  database  ${edge.config.db.url}`,
    sandbox.isolation === "none"
      ? `  sandbox   NONE: programs are not run (${sandbox.reason ?? "unknown"})`
      : `  sandbox   ${sandbox.isolation} (${sandboxText(sandbox.isolation)}; KVGRAFT_SANDBOX picks the backend)`,
    `  library   ${starterLine(starter)}`,
    edge.config.flywheel.enabled
      ? "  flywheel  on: unsure answers are solved again in the background (GET /admin/flywheel shows each item's step)"
      : `  flywheel  off (KVGRAFT_FLYWHEEL=${edge.config.flywheel.setting}; KVGRAFT_FLYWHEEL=on turns it on)`,
    embeddedModel
      ? `  model     ${modelPath}\n            the embedded model: a small model trained here on generated problem families, not a\n            general math model (docs/model.md). MODEL_PATH=/path/to/model.gguf runs another.`
      : `  model     ${modelPath}`,
    edge.generatedAdminKey
      ? `  admin key ${edge.generatedAdminKey}\n            (shown once; also saved to ${keyFile}, readable only by you)`
      : `  admin key ${keyShell.startsWith("$(") ? `in ${keyFile}` : "from KVGRAFT_ADMIN_KEY"}`,
    `  logs      ${logFile}\n            (JSON lines of both services, every request included; this terminal shows events and problems)`,
    "",
    ...tryIt,
    "",
    "Ctrl-C stops both services.",
    "",
  ];
  process.stdout.write(lines.join("\n"));
}
