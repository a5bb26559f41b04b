/**
 * `kvgraft start`'s logs (cli/log-sink.ts): every JSON line of both services lands in the log file
 * with its service, and the terminal gets a readable line only for what matters (not the line per
 * request below 500, not debug); a GPU node line that is not a log line reaches the terminal as is.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startLogSink } from "../cli/log-sink.js";

const dir = mkdtempSync(join(tmpdir(), "kvgraft-log-sink-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("kvgraft start's log sink", () => {
  it("writes every line to the file and the ones that matter, readable, to the terminal", async () => {
    const terminal: string[] = [];
    const sink = startLogSink(join(dir, "kvgraft.log"), "info", (line) => terminal.push(line));
    const request = { method: "POST", route: "/v1/solve", durationMs: 3.5, requestId: "r1" };
    sink.logger.info("request", { ...request, status: 200 });
    sink.logger.warn("request", { ...request, status: 503, code: "gpu_unavailable" });
    sink.logger.debug("request", { ...request, status: 200, route: "/health" });
    sink.logger.info("gpu node failed", { nodeId: "n1", error: "connect ECONNREFUSED" });
    // The GPU node's stderr arrives in chunks that cut lines anywhere.
    const gpuLine = JSON.stringify({
      time: "2026-12-01T20:05:23.339Z",
      level: "info",
      message: "warm start: done",
      ms: 1,
    });
    const gpuRequest = JSON.stringify({
      time: "2026-12-01T20:05:24.000Z",
      level: "info",
      message: "request",
      status: 200,
    });
    const chunks = [
      gpuLine.slice(0, 20),
      `${gpuLine.slice(20)}\n${gpuRequest}\nkvgraft serve gpu: --port`,
      " must be a number\n",
    ];
    for (const chunk of chunks)
      await new Promise<void>((resolve) => sink.gpuStderr.write(chunk, () => resolve()));
    sink.close();
    sink.logger.error("after close", {}); // the file is closed: the terminal still gets it

    expect(terminal).toEqual([
      expect.stringMatching(/^\d\d:\d\d:\d\d edge warn POST \/v1\/solve 503 gpu_unavailable 3\.5 ms$/),
      expect.stringMatching(/^\d\d:\d\d:\d\d edge gpu node failed nodeId=n1 error="connect ECONNREFUSED"$/),
      "20:05:23 gpu warm start: done ms=1",
      "kvgraft serve gpu: --port must be a number",
      expect.stringMatching(/^\d\d:\d\d:\d\d edge error after close$/),
    ]);
    const file = readFileSync(join(dir, "kvgraft.log"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { service: string; message: string; status?: number });
    expect(file.map((r) => [r.service, r.message, r.status])).toEqual([
      ["edge", "request", 200],
      ["edge", "request", 503],
      ["edge", "gpu node failed", undefined],
      ["gpu", "warm start: done", undefined],
      ["gpu", "request", 200],
    ]);
  });
});
