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
  /** Joules drawn between two `performance.now()` times while the sampler runs (samples clipped to the window). */
  between(t0: number, t1: number): number;
  /** Stops sampling (once; later calls give the same reading) and returns the energy from start to stop. */
  stop(): PowerReading;
}

/** One power reading at a `performance.now()` time. */
export type Sample = { t: number; watts: number };

/** Joules over [t0, t1]: trapezoids over consecutive samples, each pair clipped to the window (watts linear inside a pair). */
export function integratePower(samples: readonly Sample[], t0: number, t1: number): number {
  let joules = 0;
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1] as Sample;
    const b = samples[i] as Sample;
    const from = Math.max(a.t, t0);
    const to = Math.min(b.t, t1);
    if (to <= from || b.t <= a.t) continue;
    const at = (t: number) => a.watts + ((b.watts - a.watts) * (t - a.t)) / (b.t - a.t);
    joules += ((at(from) + at(to)) / 2) * ((to - from) / 1000);
  }
  return joules;
}

/** True when `nvidia-smi` answers. */
export function hasNvidiaSmi(): boolean {
  return spawnSync("nvidia-smi", ["-L"], { timeout: 5000 }).status === 0;
}

/** Starts sampling; `stop()` returns the energy between start and stop. */
export function startPowerSampler(intervalMs = 50): PowerSampler | null {
  if (!hasNvidiaSmi()) return null;
  const samples: Sample[] = [];
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
  let reading: PowerReading | null = null;
  return {
    between: (t0, t1) => integratePower(samples, t0, t1),
    stop(): PowerReading {
      if (reading) return reading;
      child.kill("SIGTERM");
      const ended = performance.now();
      const joules = integratePower(samples, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY);
      const span = samples.length > 1 ? ((samples.at(-1)?.t ?? 0) - (samples[0]?.t ?? 0)) / 1000 : 0;
      reading = {
        samples: samples.length,
        intervalMs,
        seconds: (ended - started) / 1000,
        joules,
        meanWatts: span > 0 ? joules / span : 0,
      };
      return reading;
    },
  };
}
