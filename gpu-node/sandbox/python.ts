import { execFile } from "node:child_process";
import { realpath } from "node:fs/promises";
import { promisify } from "node:util";
import { notImplemented } from "../errors.js";

const run = promisify(execFile);

/** The Python installation programs run with: what the sandbox must make visible, read-only. */
export interface PythonInstall {
  /** Interpreter path as the interpreter reports it (`sys.executable`, a venv's own when in one). */
  executable: string;
  /** Real directories the interpreter needs: its prefixes and the directory of the real binary. */
  roots: string[];
}

const REPORT = "import json, sys; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix]))";

/**
 * Asks `command` (e.g. "python3", possibly a pyenv shim) for its real interpreter and prefixes,
 * so the sandbox can run that binary directly with an empty environment. Throws 501
 * `sandbox_unavailable` when it cannot be run.
 */
export async function resolvePython(command: string): Promise<PythonInstall> {
  let stdout: string;
  try {
    ({ stdout } = await run(command, ["-I", "-c", REPORT], { timeout: 15_000 }));
  } catch (err) {
    const { code, stderr } = err as { code?: string | number; stderr?: string };
    const why =
      code === "ENOENT"
        ? "was not found on PATH"
        : `failed (${String(stderr ?? code)
            .trim()
            .slice(0, 200)})`;
    throw notImplemented(
      "sandbox_unavailable",
      `the sandbox needs Python 3: '${command}' ${why}; install python3`,
    );
  }
  const [executable, ...prefixes] = JSON.parse(stdout) as string[];
  if (!executable) throw notImplemented("sandbox_unavailable", `${command} did not report sys.executable`);
  const binary = await realpath(executable);
  const dirs = [...prefixes, binary.slice(0, binary.lastIndexOf("/"))];
  const roots = await Promise.all(dirs.map((dir) => realpath(dir)));
  return { executable, roots: outermost(roots) };
}

/** Drops duplicates and directories nested inside another listed one. */
function outermost(dirs: string[]): string[] {
  const unique = [...new Set(dirs)].sort();
  return unique.filter((dir) => !unique.some((other) => other !== dir && dir.startsWith(`${other}/`)));
}
