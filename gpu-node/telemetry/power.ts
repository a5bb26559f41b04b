/**
 * GPU power sampling with `nvidia-smi`: power draw every `intervalMs`, integrated over time
 * into joules (trapezoids). Absent an NVIDIA GPU the sampler reports nothing.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";

export interface PowerReading {
  samples: number;
  intervalMs: number;
  seconds: number;
  joules: number;
  meanWatts: number;
}

export interface PowerSampler {
  stop(): PowerReading;
}

/** True when `nvidia-smi` answers. */
export function hasNvidiaSmi(): boolean {
  return spawnSync("nvidia-smi", ["-L"], { timeout: 5000 }).status === 0;
}

/** Starts sampling; `stop()` returns the energy between start and stop. */
export function startPowerSampler(intervalMs = 50): PowerSampler | null {
  if (!hasNvidiaSmi()) return null;
  const samples: Array<{ t: number; watts: number }> = [];
  const child: ChildProcess = spawn(
    "nvidia-smi",
    ["--query-gpu=power.draw", "--format=csv,noheader,nounits", `-lms`, String(intervalMs)],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  let pending = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const watts = Number.parseFloat(line);
      if (Number.isFinite(watts)) samples.push({ t: performance.now(), watts });
    }
  });
  const started = performance.now();
  return {
    stop(): PowerReading {
      child.kill("SIGTERM");
      const ended = performance.now();
      let joules = 0;
      for (let i = 1; i < samples.length; i++) {
        const a = samples[i - 1] as { t: number; watts: number };
        const b = samples[i] as { t: number; watts: number };
        joules += ((a.watts + b.watts) / 2) * ((b.t - a.t) / 1000);
      }
      const span = samples.length > 1 ? ((samples.at(-1)?.t ?? 0) - (samples[0]?.t ?? 0)) / 1000 : 0;
      return {
        samples: samples.length,
        intervalMs,
        seconds: (ended - started) / 1000,
        joules,
        meanWatts: span > 0 ? joules / span : 0,
      };
    },
  };
}
