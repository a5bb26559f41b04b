import { REPORT_FD } from "./launcher.js";

/** What a WebAssembly child is told, passed as one JSON argument. */
export interface WasmChildConfig {
  /** The pyodide package's directory, ending in "/". */
  indexDir: string;
  /** `file:` URL of its ES module entry (pyodide.mjs). */
  moduleUrl: string;
  /** `snapshot`: boot once and write a memory snapshot on fd 3; `run`: boot from one, run one program. */
  mode: "snapshot" | "run";
  /** Largest WebAssembly heap while booting, before the job's own cap applies. */
  bootHeapBytes: number;
}

/** One program and its limits, the child's second frame on stdin. */
export interface WasmJob {
  source: string;
  /** Largest WebAssembly heap, in bytes: growing past it fails, which Python sees as MemoryError. */
  heapBytes: number;
  /** Bytes of stdout, and of stderr, written at most (the parent kills past its own cap). */
  outputBytes: number;
  /** Largest file the program may write in the in-memory file system (EFBIG past it). */
  fileBytes: number;
  /** Bytes of all files the program writes together (ENOSPC past it). */
  scratchBytes: number;
}

/** Imported before the snapshot is made (see WASM_CHILD_SOURCE). */
const PRELOADED = "import collections, decimal, fractions, functools, itertools, json, math, re";

/** What the child writes on fd 3 when it has booted and waits for its program. */
export const READY_LINE = "ready\n";

/**
 * The Python that runs inside the interpreter before a program: it takes away the bridges to
 * JavaScript (`js`, `pyodide_js`, the FFI of `_pyodide_core` and `pyodide`, `ctypes`) and scrubs the
 * environment, then returns the function that runs one program as CPython's `python main.py` would
 * (exit status from SystemExit, a traceback and status 1 for an uncaught exception).
 */
const PYTHON_PRELUDE = `
import os, sys, traceback
os.environ.clear()
def _no_processes(*args, **kwargs):
    raise OSError(38, "the sandbox runs no processes")
# Emscripten would hand os.system to Node's child_process, which the permission model refuses fatally.
os.system = _no_processes
sys.modules["posix"].system = _no_processes
sys.meta_path[:] = [f for f in sys.meta_path if "JsFinder" not in type(f).__name__]
_blocked = ("js", "pyodide_js", "pyodide", "_pyodide", "_pyodide_core", "ctypes", "_ctypes", "micropip")
for _name in list(sys.modules):
    if _name.split(".")[0] in _blocked:
        del sys.modules[_name]
for _name in _blocked:
    sys.modules[_name] = None
def _kvgraft_run(source):
    scope = {"__name__": "__main__", "__file__": "/job/main.py", "__builtins__": __builtins__}
    status = 0
    try:
        exec(compile(source, "/job/main.py", "exec"), scope)
    except SystemExit as stop:
        code = stop.code
        if code is None:
            status = 0
        elif isinstance(code, int):
            status = code & 0xFF
        else:
            print(code, file=sys.stderr)
            status = 1
    except BaseException as err:
        traceback.print_exception(type(err), err, err.__traceback__.tb_next)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    return status
del _name, _blocked, _no_processes
_kvgraft_run
`;

/**
 * The child process that holds one CPython-on-WebAssembly interpreter (pyodide) for one program.
 * It runs as an ES module (`node --input-type=module -e`) under Node's permission model, started
 * by ./wasm.ts. Before anything of pyodide loads it caps the WebAssembly heap; once the
 * interpreter is up it removes host mounts, sockets and every bridge to JavaScript, deletes the
 * globals a program could use to reach Node (process, fetch), then reads its one program from
 * stdin, runs it with stdout and stderr written straight to fds 1 and 2, reports its exit status
 * and CPU time on fd 3 and exits. The parent enforces wall clock, CPU and output limits by killing it.
 *
 * Frames on stdin: a 4-byte big-endian length, then that many bytes (the snapshot, then the job).
 */
export const WASM_CHILD_SOURCE = `
import { constants, readSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
const cfg = JSON.parse(process.argv[1]);
const exit = process.exit.bind(process);
const cpuUsage = process.cpuUsage.bind(process);
const nap = new Int32Array(new SharedArrayBuffer(4));

function writeAll(fd, bytes) {
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (err) {
      if (err.code !== "EAGAIN") throw err;
      Atomics.wait(nap, 0, 0, 1);
    }
  }
}
function readExactly(n) {
  const buf = new Uint8Array(n);
  let offset = 0;
  while (offset < n) {
    let got;
    try {
      got = readSync(0, buf, offset, n - offset, null);
    } catch (err) {
      if (err.code !== "EAGAIN") throw err;
      Atomics.wait(nap, 0, 0, 1);
      continue;
    }
    // The parent is gone (or gave this child up): nothing to do.
    if (got === 0) exit(0);
    offset += got;
  }
  return buf;
}
function readFrame() {
  const head = readExactly(4);
  return readExactly(new DataView(head.buffer).getUint32(0));
}
/** Writes at most outputBytes + 1 bytes to a stream: one past the cap tells the parent to kill. */
function cappedWriter(fd, outputBytes) {
  let left = outputBytes + 1;
  return {
    write(bytes) {
      if (left > 0) {
        const part = bytes.subarray(0, left);
        left -= part.length;
        writeAll(fd, part);
      }
      return bytes.length;
    },
  };
}

// The heap cap: pyodide grows its memory through this method, and a refusal is a failed malloc.
let heapCap = cfg.bootHeapBytes;
const grow = WebAssembly.Memory.prototype.grow;
WebAssembly.Memory.prototype.grow = function (pages) {
  if (this.buffer.byteLength + pages * 65536 > heapCap) throw new RangeError("WebAssembly heap limit");
  return grow.call(this, pages);
};

// Emscripten's NODEFS reads fs constants through process.binding, which the permission model denies.
process.binding = (name) => {
  if (name === "constants") return { fs: constants };
  throw new Error("process.binding is not available in the sandbox");
};
// Loaded with require, pyodide.asm.js skips the ES module loader's scan of its 1 MB for exports,
// which took a third of a boot; pyodide.mjs then finds _createPyodideModule already defined.
createRequire(cfg.moduleUrl)(cfg.indexDir + "pyodide.asm.js");
const { loadPyodide } = await import(cfg.moduleUrl);
const quiet = { write: (bytes) => bytes.length };
const base = { indexURL: cfg.indexDir, jsglobals: Object.create(null), env: {}, stdout: () => {}, stderr: () => {} };

if (cfg.mode === "snapshot") {
  const py = await loadPyodide({ ...base, _makeSnapshot: true });
  // Modules programs commonly import, imported once into the image every program starts from
  // (fractions alone costs 50 ms a program otherwise); not random, whose seed would be shared.
  py.runPython(${JSON.stringify(PRELOADED)});
  const snapshot = py.makeMemorySnapshot();
  writeAll(${REPORT_FD}, snapshot);
  exit(0);
}

const py = await loadPyodide({ ...base, _loadSnapshot: readFrame() });
const M = py._module;
// No host mounts: the file system types that reach outside memory are gone.
for (const name of ["NODEFS", "NATIVEFS_ASYNC", "WORKERFS", "PROXYFS", "IDBFS"]) {
  delete M.FS.filesystems[name];
  delete M[name];
}
// No network: every socket the Emscripten layer would make fails with EACCES.
M.SOCKFS.createSocket = () => {
  throw new M.FS.ErrnoError(M.ERRNO_CODES.EACCES);
};
// File caps: the in-memory files live outside the WebAssembly heap, so their sizes are counted here.
let fileCap = Infinity;
let scratchCap = Infinity;
const files = new Map();
const linked = (node) => node.parent?.contents?.[node.name] === node;
function reserve(node, size) {
  if (size > fileCap) throw new M.FS.ErrnoError(M.ERRNO_CODES.EFBIG);
  let total = size;
  for (const [other, bytes] of files) {
    if (other !== node && linked(other)) total += bytes;
    else if (other !== node) files.delete(other);
  }
  if (total > scratchCap) throw new M.FS.ErrnoError(M.ERRNO_CODES.ENOSPC);
  files.set(node, size);
}
const MEMFS = M.MEMFS;
const write = MEMFS.stream_ops.write;
const cappedWrite = function (stream, buffer, offset, length, position, canOwn) {
  if (position + length > stream.node.usedBytes) reserve(stream.node, position + length);
  return write.call(this, stream, buffer, offset, length, position, canOwn);
};
// Files take their stream operations from ops_table (a copy made at boot), new ones too.
MEMFS.stream_ops.write = cappedWrite;
MEMFS.ops_table.file.stream.write = cappedWrite;
const expand = MEMFS.expandFileStorage;
MEMFS.expandFileStorage = function (node, capacity) {
  if (capacity > node.usedBytes) reserve(node, capacity);
  return expand.call(this, node, capacity);
};
const resize = MEMFS.resizeFileStorage;
MEMFS.resizeFileStorage = function (node, size) {
  if (size > node.usedBytes) reserve(node, size);
  return resize.call(this, node, size);
};
py.unregisterJsModule("js");
py.unregisterJsModule("pyodide_js");
py.setStdin({ stdin: () => null });
py.setStdout(quiet);
py.setStderr(quiet);
const run = py.runPython(${JSON.stringify(PYTHON_PRELUDE)});
// Nothing of Node stays in reach of a program: no process (env, bindings, modules), no fetch.
for (const name of ["process", "fetch", "require", "module", "global", "WebSocket", "EventSource",
  "navigator", "loadPyodide", "_createPyodideModule"])
  delete globalThis[name];
writeAll(${REPORT_FD}, new TextEncoder().encode(${JSON.stringify(READY_LINE)}));

const job = JSON.parse(new TextDecoder().decode(readFrame()));
// Where bubblewrap puts them: the program at /job/main.py, the working directory /scratch.
M.FS.mkdirTree("/job");
M.FS.writeFile("/job/main.py", job.source);
M.FS.mkdirTree("/scratch");
M.FS.chdir("/scratch");
files.clear();
heapCap = job.heapBytes;
fileCap = job.fileBytes;
scratchCap = job.scratchBytes;
py.setStdout(cappedWriter(1, job.outputBytes));
py.setStderr(cappedWriter(2, job.outputBytes));
const started = cpuUsage();
let status;
try {
  status = run(job.source);
} catch (err) {
  // The interpreter itself failed (a trap, or a heap it could not grow): report it as Python would.
  const text = String(err && err.message || err);
  const oom = /heap limit|Cannot enlarge memory|out of memory|OOM/i.test(text);
  writeAll(2, new TextEncoder().encode((oom ? "MemoryError: " : "RuntimeError: ") + text + "\\n"));
  status = 1;
}
const used = cpuUsage(started);
const report = { exit: status, signal: null, cpuMs: Math.round((used.user + used.system) / 1000) };
writeAll(${REPORT_FD}, new TextEncoder().encode(JSON.stringify(report)));
exit(0);
`;
