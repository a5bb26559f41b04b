/**
 * The process-supervision helper (tools/process/supervise.ts) with real child processes: the ready
 * line, a child that dies or hangs before it, stop with SIGTERM then SIGKILL, and a parent that
 * exits without stopping its child.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { readyUrl, supervise } from "../tools/process/supervise.js";

const nodeScript = (source: string) => ["-e", source];
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("supervise", () => {
  it("resolves the ready line, passes other stdout lines on and keeps stderr", async () => {
    const others: string[] = [];
    const child = supervise({
      name: "ready child",
      args: nodeScript(
        `console.log("warming up"); console.log("{not json"); console.error("to stderr");
         console.log(JSON.stringify({ url: "http://127.0.0.1:9/" })); setInterval(() => {}, 1000);`,
      ),
      ready: readyUrl,
      onStdoutLine: (line) => others.push(line),
    });
    expect(await child.ready).toBe("http://127.0.0.1:9");
    expect(others).toEqual(["warming up", "{not json"]);
    const status = await child.stop();
    expect(status.signal).toBe("SIGTERM");
    expect(child.stderr()).toContain("to stderr");
    expect(child.running).toBe(false);
  });

  it("rejects with the stderr tail when the child exits before it is ready", async () => {
    const child = supervise({
      name: "failing child",
      args: nodeScript(`console.error("bad configuration: PORT"); process.exit(2);`),
      ready: readyUrl,
    });
    await expect(child.ready).rejects.toThrow(
      /failing child exited \(2\) before it was ready:\nbad configuration: PORT/,
    );
  });

  it("kills a child that is not ready in time", async () => {
    const child = supervise({
      name: "hanging child",
      args: nodeScript("setInterval(() => {}, 1000);"),
      ready: readyUrl,
      readyTimeoutMs: 300,
    });
    await expect(child.ready).rejects.toThrow(/hanging child was not ready within 0.3 s/);
    expect((await child.exited).signal).toBe("SIGKILL");
  });

  it("escalates to SIGKILL when SIGTERM is ignored", async () => {
    const child = supervise({
      name: "stubborn child",
      args: nodeScript(`process.on("SIGTERM", () => {}); console.log("{}"); setInterval(() => {}, 1000);`),
      ready: (line) => line,
    });
    await child.ready;
    expect((await child.stop(200)).signal).toBe("SIGKILL");
  });

  it("passes a forwarded signal on to the child, then dies of it as it would have", async () => {
    const parent = supervise({
      name: "parent",
      args: [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        `import { supervise } from "./tools/process/supervise.ts";
         const child = supervise({ name: "grandchild", args: ["-e", "setInterval(() => {}, 1000)"],
           forwardSignals: ["SIGHUP"] });
         console.log(JSON.stringify({ pid: child.child.pid }));
         setInterval(() => {}, 1000);`,
      ],
      ready: (line) => (line as { pid: number }).pid,
      readyTimeoutMs: 30_000,
    });
    const pid = await parent.ready;
    try {
      expect(alive(pid)).toBe(true);
      parent.child.kill("SIGHUP");
      expect((await parent.exited).signal).toBe("SIGHUP");
      const until = Date.now() + 5_000;
      while (alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      expect(alive(pid)).toBe(false);
    } finally {
      // A failed run leaves no orphan behind.
      if (alive(pid)) process.kill(pid, "SIGKILL");
    }
  });

  it("stops the child when the supervising process exits", () => {
    // A parent that starts a long-running child and exits at once, printing the child's pid.
    const parent = spawnSync(
      process.execPath,
      [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        `import { supervise } from "./tools/process/supervise.ts";
         const child = supervise({ name: "orphan", args: ["-e", "setInterval(() => {}, 1000)"] });
         console.log(child.child.pid);
         setTimeout(() => process.exit(0), 200);`,
      ],
      { encoding: "utf8", timeout: 30_000 },
    );
    expect(parent.status).toBe(0);
    const pid = Number(parent.stdout.trim());
    expect(pid).toBeGreaterThan(0);
    // SIGTERM was sent on exit; give the child a moment to act on it.
    const until = Date.now() + 5_000;
    while (alive(pid) && Date.now() < until) spawnSync("sleep", ["0.05"]);
    const survived = alive(pid);
    if (survived) process.kill(pid, "SIGKILL");
    expect(survived).toBe(false);
  });
});
