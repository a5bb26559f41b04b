/**
 * The problem families (tools/families/) that the embedded model is trained on and the experiments
 * draw from: at least 60 over the eight domains, each phrasing naming every parameter once and no
 * other digits, the numbers reaching PARAMS in the phrasing's order, the fixed split (at least 15
 * held-out families, one held-out phrasing in every other, extra training phrasings only in trained
 * families and before the held-out one, a second held-out set kept out of training), and every
 * program printing, in the product's sandbox, the answer the family computes in TypeScript.
 */
import { describe, expect, it } from "vitest";
import { Sandbox } from "../gpu-node/sandbox/sandbox.js";
import { seededRng } from "../shared/random.js";
import type { Family } from "../tools/families/family.js";
import {
  FAMILIES,
  freshPhrasings,
  HELD_OUT_FAMILY_IDS,
  isTrainedFamily,
  MORE_PHRASINGS,
  trainingPhrasings,
} from "../tools/families/index.js";
import { FRESH_PHRASINGS } from "../tools/families/phrasings/fresh.js";
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

  it("add extra training phrasings only to trained families, before the held-out phrasing", () => {
    for (const [id, more] of Object.entries(MORE_PHRASINGS)) {
      const f = FAMILIES.find((x) => x.id === id);
      expect(f, id).toBeDefined();
      if (!f) continue;
      expect(isTrainedFamily(f), id).toBe(true);
      const trained = trainingPhrasings(f).map((i) => f.phrasings[i]);
      for (const text of more) expect(trained, id).toContain(text);
      expect(more, id).not.toContain(f.phrasings[f.phrasings.length - 1]);
    }
  });

  it("keep the second held-out set out of every family's phrasings, two per trained family, no repeats", () => {
    // Case, digits and punctuation aside: a repeat that differs only there is still a repeat.
    const key = (text: string) =>
      text
        .toLowerCase()
        .replace(/[^a-z{}@ ]/g, "")
        .replace(/\s+/g, " ")
        .trim();
    for (const f of FAMILIES) {
      const all = [...f.phrasings, ...freshPhrasings(f)].map(key);
      expect(new Set(all).size, f.id).toBe(all.length);
    }
    for (const [id, fresh] of Object.entries(FRESH_PHRASINGS)) {
      const f = FAMILIES.find((x) => x.id === id);
      expect(f && isTrainedFamily(f), id).toBe(true);
      for (const text of fresh) expect(f?.phrasings, id).not.toContain(text);
    }
    for (const f of FAMILIES.filter(isTrainedFamily)) expect(freshPhrasings(f).length, f.id).toBe(2);
    for (const f of FAMILIES.filter((x) => !isTrainedFamily(x))) expect(freshPhrasings(f), f.id).toEqual([]);
  });

  it("name each parameter once per phrasing, no other digits, and give PARAMS in the phrasing's order", () => {
    const check = (f: Family, text: string, label: string) => {
      const rng = seededRng(`test/${label}`);
      expect([...phrasingOrder(text)].sort(), label).toEqual([...f.params].sort());
      expect(/\d/.test(text.replace(/\{[^}]*\}/g, "")), `${label} has digits`).toBe(false);
      for (let k = 0; k < 5; k++) {
        const instance = renderInstance(f, -1, f.sample(rng), rng, text);
        expect(instanceProblem(instance), instance.problem).toBeNull();
      }
    };
    for (const f of FAMILIES) {
      for (const [i, text] of f.phrasings.entries()) check(f, text, `${f.id} #${i}`);
      for (const [i, text] of freshPhrasings(f).entries()) check(f, text, `${f.id} fresh #${i}`);
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
