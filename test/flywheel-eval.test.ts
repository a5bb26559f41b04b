/**
 * A small version of `kvgraft eval flywheel` (tools/eval/flywheel-eval.ts) on the embedded model:
 * two held-out families through a real edge and GPU node on loopback. It asserts the experiment's
 * invariants, not the model's accuracy: every deposited problem replays right from the library with
 * 0 GPU tokens, a transfer is right wherever it answers, and no answer is verified and wrong; each
 * step's answers are counted and timed, with energy only where nvidia-smi answers.
 */
import { describe, expect, it } from "vitest";
import { hasNvidiaSmi } from "../gpu-node/telemetry/power.js";
import { PHASES, runFlywheelEval } from "../tools/eval/flywheel-eval.js";
import { EMBEDDED_MODEL_PATH } from "../tools/eval/stack.js";

describe("kvgraft eval flywheel (2 families)", () => {
  it("replays every deposit with 0 GPU tokens, transfers right, never verifies a wrong answer", async () => {
    const r = await runFlywheelEval({
      modelPath: EMBEDDED_MODEL_PATH,
      families: 2,
      samples: 4,
      seed: "ci",
      graftTokens: 128,
      log: () => undefined,
    });
    expect(r.bestOfK.n).toBe(2);
    expect(r.deposit.n).toBe(r.deposit.fromFlywheel + r.deposit.fromOperator);
    expect(r.replay.n).toBe(r.deposit.n);
    expect(r.replay.correct).toBe(r.replay.n);
    expect(r.replay.gpuTokens).toBe(0);
    for (const f of r.families.filter((x) => x.replay)) expect(f.replay?.source).toBe("library");
    expect(r.transfer.correct).toBe(r.transfer.n);
    expect(r.transfer.tokensOut).toBe(0);
    expect(r.graft.n).toBe(r.deposit.n);
    expect(r.wrongVerified).toBe(0);
    expect(r.deposit.flywheelWrong).toBe(0);
    expect(r.perAnswer.baseline.answers).toBe(r.baseline.n);
    expect(r.perAnswer.bestOfK.answers).toBe(r.bestOfK.n);
    expect(r.perAnswer.replay.answers).toBe(r.replay.n);
    expect(r.perAnswer.graft.answers).toBe(r.graft.n);
    expect(r.gpuPower.sampled).toBe(hasNvidiaSmi());
    for (const p of PHASES) {
      const cost = r.perAnswer[p];
      if (cost.answers > 0) expect(cost.msPerAnswer, p).toBeGreaterThanOrEqual(0);
      expect(cost.joulesPerAnswer === null, p).toBe(!r.gpuPower.sampled || cost.answers === 0);
    }
  }, 600_000);
});
