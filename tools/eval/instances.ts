/**
 * The evaluations' problems: new instances of the families (numbers drawn from a seed no training
 * set uses), in the conditions of the embedded model's split (tools/families/index.ts): trained
 * families on a training phrasing, on their held-out phrasing, on the second held-out set
 * (phrasings/fresh.ts), and held-out families.
 */

import { seededRng } from "../../shared/random.js";
import {
  FAMILIES,
  type Family,
  freshPhrasings,
  heldOutPhrasing,
  isTrainedFamily,
  trainingPhrasings,
} from "../families/index.js";
import { type Instance, instanceProblem, renderInstance } from "../families/render.js";

/**
 * The model's relation to an instance: trained family and phrasing, trained family on its held-out
 * phrasing or on a phrasing of the second held-out set, held-out family.
 */
export type Condition = "trainedPhrasing" | "heldOutPhrasing" | "freshPhrasing" | "heldOutFamily";

/** Every condition, in report order. */
export const CONDITIONS: readonly Condition[] = [
  "trainedPhrasing",
  "heldOutPhrasing",
  "freshPhrasing",
  "heldOutFamily",
];

export interface EvalInstance extends Instance {
  condition: Condition;
}

/**
 * Draws `family`'s phrasing `phrasing` (or `text`, a phrasing outside the family's list, numbered
 * `phrasing`) with numbers from `seed` (redrawn until PARAMS are the phrasing's numbers). `label`
 * names the draw in place of the phrasing's number, so that phrasings added to a family do not
 * change the numbers of its held-out draws.
 */
export function drawInstance(
  family: Family,
  phrasing: number,
  seed: string,
  text?: string,
  label: string = String(phrasing),
): Instance {
  const rng = seededRng(`eval/${seed}/${family.id}/${label}`);
  for (let attempt = 0; attempt < 100; attempt++) {
    const instance = renderInstance(family, phrasing, family.sample(rng), rng, text);
    if (instanceProblem(instance) === null) return instance;
  }
  throw new Error(`${family.id}: no valid instance of phrasing ${phrasing} in 100 draws`);
}

/** The trained families, in file order. */
export function trainedFamilies(): Family[] {
  return FAMILIES.filter(isTrainedFamily);
}

/** The held-out families, in file order. */
export function heldOutFamilies(): Family[] {
  return FAMILIES.filter((f) => !isTrainedFamily(f));
}

/**
 * `perFamily` new instances of every family in each condition: trained families on a training
 * phrasing (picked by the seed), on their held-out phrasing and on each of their fresh phrasings,
 * held-out families on any phrasing.
 */
export function evalInstances(perFamily: number, seed: string): Record<Condition, EvalInstance[]> {
  const sets: Record<Condition, EvalInstance[]> = {
    trainedPhrasing: [],
    heldOutPhrasing: [],
    freshPhrasing: [],
    heldOutFamily: [],
  };
  for (let i = 0; i < perFamily; i++) {
    const s = `${seed}/${i}`;
    for (const family of trainedFamilies()) {
      const seen = trainingPhrasings(family);
      const pick = seededRng(`eval/${s}/${family.id}/phrasing`).pick(seen);
      sets.trainedPhrasing.push({ ...drawInstance(family, pick, s), condition: "trainedPhrasing" });
      sets.heldOutPhrasing.push({
        ...drawInstance(family, heldOutPhrasing(family), s, undefined, "held-out"),
        condition: "heldOutPhrasing",
      });
      // Numbered after the family's own phrasings; each fresh phrasing draws its own numbers.
      freshPhrasings(family).forEach((text, j) => {
        const instance = drawInstance(family, family.phrasings.length + j, s, text, `fresh-${j}`);
        sets.freshPhrasing.push({ ...instance, condition: "freshPhrasing" });
      });
    }
    for (const family of heldOutFamilies()) {
      const pick = seededRng(`eval/${s}/${family.id}/phrasing`).int(0, family.phrasings.length - 1);
      sets.heldOutFamily.push({ ...drawInstance(family, pick, s), condition: "heldOutFamily" });
    }
  }
  return sets;
}
