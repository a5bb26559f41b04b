/**
 * Generates a synthetic router library: the development library (test/fixtures/router-library.jsonl)
 * verbatim, then variants of its problems with other names, objects and numbers until there are
 * `count` problems with distinct templates, deterministically from `seed`. Only problem texts
 * (routing needs nothing else), each with the id of the dev problem it varies.
 * Used by bench/router-bench.ts and scripts/gen-router-library.ts (which writes it as JSONL).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { problemTemplate } from "../shared/normalize.js";
import { seededRng } from "../shared/random.js";

export interface GeneratedEntry {
  id: string;
  problem: string;
  /** The development-library problem this one varies (its own id for the originals). */
  seed: string;
}

const NAMES = (
  "Sam Ann Bob Kira Omar Lena Raj Mia Theo Yuki Ines Paul Zara Ivan Nora Eli Ada Hugo Lola Finn " +
  "Tara Jude Vera Ravi Cleo Otto Maya Luca Nina Abel"
).split(" ");
const THINGS = (
  "apples pens lanterns notebooks candles tickets bricks shells stamps marbles cups kites coins " +
  "books plates ropes tiles buttons jars boxes crayons gloves hats seeds lamps rings mugs flags " +
  "bells keys"
).split(" ");
const PLACES = "garden field yard court plaza park lawn roof patio farm".split(" ");
const EXTRA = (
  "carefully quickly together exactly altogether precisely roughly finally afterwards eventually " +
  "today yesterday overall first later"
).split(" ");

/** The lines of a development-set file in test/fixtures, found above this module (sources or dist/). */
export function devFixture<T>(name: string): T[] {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "test", "fixtures", name))) {
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error(`test/fixtures/${name} not found above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  return readFileSync(join(dir, "test", "fixtures", name), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
}

/** `count` problems: the dev library first, then variants, every template distinct. */
export function generateRouterLibrary(count: number, seed = 1): GeneratedEntry[] {
  const base = devFixture<{ id: string; problem: string }>("router-library.jsonl");
  // The same seed always gives the same library.
  const rng = seededRng(`router-library/${seed}`);
  const random = rng.next;
  const pick = rng.pick;
  const out: GeneratedEntry[] = base
    .slice(0, count)
    .map((e) => ({ id: e.id, problem: e.problem, seed: e.id }));
  const templates = new Set(out.map((e) => problemTemplate(e.problem).template));
  let attempts = 0;
  while (out.length < count) {
    if (++attempts > count * 50) throw new Error(`could not generate ${count} distinct templates`);
    const from = pick(base);
    let text = from.problem
      .replace(/\b(?:Sam|Alice|Bob|he|she)\b/g, () => pick(NAMES))
      .replace(/\b(?:apples|jars|marbles|books|numbers)\b/g, () => pick(THINGS))
      .replace(/\b(?:garden|room|town)\b/g, () => pick(PLACES))
      .replace(/\d+/g, (d) => String(Math.max(1, Math.round(Number(d) * (0.5 + random())))));
    // One or two inserted words make most variants a template of their own.
    const words = text.split(" ");
    for (let k = 0; k < 1 + Math.floor(random() * 2); k++)
      words.splice(1 + Math.floor(random() * (words.length - 1)), 0, pick(EXTRA));
    text = words.join(" ");
    const { template } = problemTemplate(text);
    if (templates.has(template)) continue;
    templates.add(template);
    out.push({ id: `${from.id}-g${out.length}`, problem: text, seed: from.id });
  }
  return out;
}
