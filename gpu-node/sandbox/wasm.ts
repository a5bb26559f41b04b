import { type ChildProcess, spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { notImplemented } from "../errors.js";
import { REPORT_FD } from "./launcher.js";
import type { SandboxLimits } from "./limits.js";
import { type ProcessOutcome, superviseProcess } from "./process.js";
import { READY_LINE, WASM_CHILD_SOURCE, type WasmChildConfig, type WasmJob } from "./wasm-child.js";

/** Bytes of the V8 heap of one child (the interpreter's JavaScript side; programs live in the WebAssembly heap). */
const CHILD_JS_HEAP_MB = 256;
/** WebAssembly heap while the interpreter boots, before the job's own cap applies. */
const BOOT_HEAP_BYTES = 256 * 1024 * 1024;
/** How long a child may take to make the snapshot, or to boot from it. */
const BOOT_TIMEOUT_MS = 60_000;

/** The pyodide package's real directory (the interpreter and its standard library ship in it). */
export function pyodideDir(): string {
  return realpathSync(dirname(fileURLToPath(import.meta.resolve("pyodide/package.json"))));
}

/**
 * Node's flags for a child: the permission model lets it read the pyodide package and nothing
 * else, write no file, start no process, worker or addon; code generation from strings is off (no
 * eval or Function, so a JavaScript object reached from Python cannot become code); the V8 heap
 * is capped. Its environment is empty (see `spawnChild`). WebAssembly is compiled lazily by the
 * baseline compiler only: an interpreter runs one short program, so optimizing its 10 MB of code
 * would cost more CPU than it saves (with the child's require of pyodide.asm.js, a boot takes 350 ms
 * of CPU instead of 580, measured on the 2-core machine on 2026-12-01).
 */
export function permissionFlags(indexDir: string): string[] {
  return [
    "--experimental-permission",
    `--allow-fs-read=${join(indexDir, "*")}`,
    "--disallow-code-generation-from-strings",
    `--max-old-space-size=${CHILD_JS_HEAP_MB}`,
    "--wasm-lazy-compilation",
    "--liftoff-only",
    "--no-warnings",
  ];
}

/** The command line of one child (./wasm-child.ts, as an ES module). */
function wasmChildArgs(config: WasmChildConfig): string[] {
  return [
    ...permissionFlags(config.indexDir),
    "--input-type=module",
    "-e",
    WASM_CHILD_SOURCE,
    JSON.stringify(config),
  ];
}

function frame(bytes: Uint8Array): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(bytes.length);
  return Buffer.concat([head, bytes]);
}

function spawnChild(config: WasmChildConfig): ChildProcess {
  const child = spawn(process.execPath, wasmChildArgs(config), {
    env: {},
    detached: true,
    stdio: ["pipe", "pipe", "pipe", "pipe"],
  });
  // Idle children must not keep the parent alive; a job's own timers do while it runs.
  child.unref();
  for (const stream of child.stdio) (stream as (Readable & { unref?: () => void }) | null)?.unref?.();
  child.stdin?.on("error", () => {});
  return child;
}

function killChild(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/** Collects what a child writes on fd 3 until `done` says it has enough, or it ends. */
function readReport(
  child: ChildProcess,
  done: (bytes: Buffer) => boolean,
): Promise<{ bytes: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const errors: Buffer[] = [];
    const fd3 = child.stdio[REPORT_FD] as Readable;
    const timer = setTimeout(() => {
      killChild(child);
      reject(new Error(`the interpreter did not start within ${BOOT_TIMEOUT_MS} ms`));
    }, BOOT_TIMEOUT_MS);
    const onError = (chunk: Buffer) => errors.push(chunk);
    const settle = (ok: boolean) => {
      clearTimeout(timer);
      fd3.off("data", onData);
      child.stderr?.off("data", onError);
      child.off("close", onClose);
      child.off("error", onSpawnError);
      const bytes = Buffer.concat(chunks);
      const stderr = Buffer.concat(errors).toString("utf8").trim().slice(-500);
      if (ok) resolve({ bytes, stderr });
      else reject(new Error(`the interpreter failed to start: ${stderr || `exit ${child.exitCode}`}`));
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      if (done(Buffer.concat(chunks))) settle(true);
    };
    const onClose = () => settle(child.exitCode === 0 && chunks.length > 0);
    const onSpawnError = () => settle(false);
    fd3.on("data", onData);
    child.stderr?.on("data", onError);
    child.once("close", onClose);
    child.once("error", onSpawnError);
  });
}

let snapshot: Promise<Buffer> | undefined;

/** The interpreter's memory right after it booted, made once per process by a child and reused. */
function memorySnapshot(config: Omit<WasmChildConfig, "mode">): Promise<Buffer> {
  snapshot ??= (async () => {
    const child = spawnChild({ ...config, mode: "snapshot" });
    child.stdin?.end();
    const { bytes } = await readReport(child, () => false);
    return bytes;
  })();
  snapshot.catch(() => {
    snapshot = undefined;
  });
  return snapshot;
}

/** A child that has booted from the snapshot (or is booting) and waits for its one program. */
interface WarmChild {
  child: ChildProcess;
  ready: Promise<void>;
}

/**
 * Runs each program in a fresh CPython-on-WebAssembly interpreter of its own, in a child process
 * of its own (see ./wasm-child.ts): nothing a program leaves behind (files, modules, globals)
 * reaches another. Interpreters boot from a memory snapshot and wait, `warm` at a time, so a
 * program does not wait for one to boot; each is used once and then ends.
 */
export class WasmIsolation {
  readonly mode = "wasm" as const;
  private readonly warm: WarmChild[] = [];
  private closed = false;

  private constructor(
    private readonly config: Omit<WasmChildConfig, "mode">,
    private readonly image: Buffer,
    private readonly warmCount: number,
  ) {
    this.refill();
  }

  /** Makes (or reuses) the snapshot and starts `warm` interpreters; 501 `sandbox_unavailable` when pyodide cannot run. */
  static async create(warm: number): Promise<WasmIsolation> {
    let config: Omit<WasmChildConfig, "mode">;
    try {
      const indexDir = `${pyodideDir()}/`;
      config = {
        indexDir,
        moduleUrl: pathToFileURL(join(indexDir, "pyodide.mjs")).href,
        bootHeapBytes: BOOT_HEAP_BYTES,
      };
      return new WasmIsolation(config, await memorySnapshot(config), Math.max(0, warm));
    } catch (err) {
      throw notImplemented(
        "sandbox_unavailable",
        `programs are not run: the WebAssembly interpreter (npm package pyodide) does not start here (${(err as Error).message}); run npm ci`,
      );
    }
  }

  /** Runs one program (PARAMS line included) in a fresh interpreter under `limits`. */
  async execute(source: string, limits: SandboxLimits): Promise<ProcessOutcome> {
    let next = this.warm.shift() ?? this.boot();
    // One that died while it waited (killed from outside) is replaced.
    if (next.child.exitCode !== null || next.child.signalCode !== null) next = this.boot();
    try {
      await next.ready;
    } catch (err) {
      return {
        stdout: "",
        stderr: `sandbox could not start: ${(err as Error).message}`,
        report: null,
        killedFor: null,
        wallMs: 0,
      };
    }
    const job: WasmJob = {
      source,
      heapBytes: limits.memoryBytes,
      outputBytes: limits.outputBytes,
      fileBytes: limits.fileBytes,
      scratchBytes: limits.scratchBytes,
    };
    const outcome = superviseProcess(next.child, {
      wallMs: limits.wallMs,
      outputBytes: limits.outputBytes,
      cpuMs: limits.cpuSeconds * 1000,
    });
    next.child.stdin?.end(frame(Buffer.from(JSON.stringify(job))));
    // The replacement boots once this program is done, not beside it: a boot takes both cores' worth
    // of a few hundred ms, which would double a program's latency on a small machine.
    return outcome.finally(() => this.refill());
  }

  /** Resolves when the interpreters now waiting have booted (or failed to). */
  async warmed(): Promise<void> {
    await Promise.allSettled(this.warm.map((w) => w.ready));
  }

  /** Ends the waiting interpreters; jobs already running finish. */
  close(): void {
    this.closed = true;
    for (const { child } of this.warm.splice(0)) killChild(child);
  }

  private refill(): void {
    while (!this.closed && this.warm.length < this.warmCount) this.warm.push(this.boot());
  }

  private boot(): WarmChild {
    const child = spawnChild({ ...this.config, mode: "run" });
    child.stdin?.write(frame(this.image));
    const ready = readReport(child, (bytes) => bytes.toString() === READY_LINE).then(() => {});
    ready.catch(() => {
      // A child that failed to boot leaves the warm set; the next job boots another.
      const at = this.warm.findIndex((w) => w.child === child);
      if (at >= 0) this.warm.splice(at, 1);
    });
    return { child, ready };
  }
}
