/**
 * The problem families (tools/families/) that the embedded model is trained on and the experiments
 * draw from: at least 60 over the eight domains, each phrasing naming every parameter once and no
 * other digits, the numbers reaching PARAMS in the phrasing's order, the fixed split (at least 15
 * held-out families, one held-out phrasing in every other), and every program printing, in the
 * product's sandbox, the answer the family computes in TypeScript.
 */
import { describe, expect, it } from "vitest";
import { Sandbox } from "../gpu-node/sandbox/sandbox.js";
import { seededRng } from "../shared/random.js";
import {
  FAMILIES,
  HELD_OUT_FAMILY_IDS,
  isTrainedFamily,
  trainingPhrasings,
} from "../tools/families/index.js";
import { instanceProblem, phrasingOrder, renderInstance } from "../tools/families/render.js";

const DOMAINS = [
  "arithmetic",
  "algebra",
  "number-theory",
  "combinatorics",
  "geometry",
  "probability",
  "units",
  "time",
];

describe("problem families", () => {
  it("cover every domain with at least 60 families of unique ids and at least five phrasings each", () => {
    expect(FAMILIES.length).toBeGreaterThanOrEqual(60);
    expect(new Set(FAMILIES.map((f) => f.id)).size).toBe(FAMILIES.length);
    for (const d of DOMAINS)
      expect(FAMILIES.filter((f) => f.domain === d).length, d).toBeGreaterThanOrEqual(5);
    for (const f of FAMILIES) expect(f.phrasings.length, f.id).toBeGreaterThanOrEqual(5);
  });

  it("hold out at least 15 families entirely and the last phrasing of every other", () => {
    expect(HELD_OUT_FAMILY_IDS.size).toBeGreaterThanOrEqual(15);
    for (const f of FAMILIES) {
      const used = trainingPhrasings(f);
      if (isTrainedFamily(f)) expect(used).not.toContain(f.phrasings.length - 1);
      else expect(used).toEqual([]);
    }
  });

  it("name each parameter once per phrasing, no other digits, and give PARAMS in the phrasing's order", () => {
    for (const f of FAMILIES) {
      const rng = seededRng(`test/${f.id}`);
      f.phrasings.forEach((text, i) => {
        expect([...phrasingOrder(text)].sort(), `${f.id} #${i}`).toEqual([...f.params].sort());
        expect(/\d/.test(text.replace(/\{[^}]*\}/g, "")), `${f.id} #${i} has digits`).toBe(false);
        for (let k = 0; k < 5; k++) {
          const instance = renderInstance(f, i, f.sample(rng), rng);
          expect(instanceProblem(instance), instance.problem).toBeNull();
        }
      });
    }
  });

  it("have programs that print, in the product's sandbox, what the family's answer() computes", async () => {
    const sandbox = await Sandbox.create();
    const rng = seededRng("test/programs");
    const jobs = FAMILIES.flatMap((f) =>
      [0, 1].map(() => renderInstance(f, rng.int(0, f.phrasings.length - 1), f.sample(rng), rng)),
    );
    const wrong: string[] = [];
    for (const instance of jobs) {
      const r = await sandbox.run({
        source: instance.program,
        params: instance.literals,
        expect: instance.answer,
      });
      if (r.verdict !== "ok")
        wrong.push(`${instance.familyId}: ${r.verdict} ${r.stdout.trim()} vs ${instance.answer}`);
    }
    expect(wrong).toEqual([]);
  }, 600_000);
});
