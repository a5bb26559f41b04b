/**
 * Writes the embedded model's training data (a developer's tool; docs/model.md):
 *   node --import tsx tools/model/dataset.ts --out DIR [--seed 0]
 * From the trained families' training phrasings it draws solve and graft transcripts
 * (transcripts.ts), adds graft transcripts on synthetic families and on trained families with a
 * changed program (synthetic.ts: only copying the block completes them; answers from python3),
 * learns the vocabulary over the real families' texts (vocab.ts), writes a GGUF with that tokenizer
 * and the chat template (random weights of the final layout), loads it in node-llama-cpp and
 * tokenizes every transcript with it. Output in DIR: tokens.u16.gz (all token ids), index.i32.gz (per
 * transcript: offset, length, two loss ranges, split: 0 trained on, 1 held-out phrasing, scored
 * only), vocab.json, tokenizer.gguf, dataset.json (layout, training settings, reference prompts).
 * The same seed gives the same bytes.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { getLlama, resolveChatWrapper } from "node-llama-cpp";
import { writeSyntheticModel } from "../../gpu-node/synth/synth-model.js";
import { seededRng } from "../../shared/random.js";
import type { Rng } from "../families/family.js";
import {
  FAMILIES,
  type Family,
  heldOutPhrasing,
  isTrainedFamily,
  trainingPhrasings,
} from "../families/index.js";
import { type Instance, instanceProblem, renderInstance } from "../families/render.js";
import { decorate, variedPhrasing } from "./augment.js";
import { CHAT_TEMPLATE, MODEL_SPEC, TRAINING } from "./spec.js";
import { mutatedProgram, runPrograms, syntheticFamily } from "./synthetic.js";
import { blockTextOf, solveTexts, type Tokenized, TranscriptTokenizer } from "./transcripts.js";
import { trainVocabulary } from "./vocab.js";

/** Budgets a solve request may carry (maxTokens over samples), so the final prompt's limits vary. */
const BUDGETS = [512, 1024, 2048, 4096] as const;
const SAMPLE_COUNTS = [1, 2, 4, 8] as const;
/** Identifiers a graft transcript may rename a family's parameters to, so the model copies from the block. */
const RENAMES = [
  "a",
  "b",
  "c",
  "n",
  "m",
  "k",
  "x",
  "y",
  "z",
  "p",
  "q",
  "r",
  "s",
  "t",
  "u",
  "v",
  "w",
  "g",
  "h",
  "j",
];

type Item =
  | { kind: "solve"; split: 0 | 1; method: string; instance: Instance; maxTokens: number; samples: number }
  | { kind: "graft"; split: 0; method: string; sibling: Instance; instance: Instance; synthetic: boolean };

function argValue(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at >= 0 && process.argv[at + 1] ? (process.argv[at + 1] as string) : fallback;
}

/** Renames parameters in an instance's program and reasoning (whole identifiers only). */
function renamed(instance: Instance, names: Map<string, string>): Instance {
  const swap = (text: string) =>
    text.replace(/\b[A-Za-z_][A-Za-z0-9_]*\b/g, (word) => names.get(word) ?? word);
  const params = Object.fromEntries(Object.entries(instance.params).map(([k, v]) => [names.get(k) ?? k, v]));
  return { ...instance, program: swap(instance.program), order: instance.order.map(swap), params };
}

function renaming(family: Family, rng: Rng): Map<string, string> {
  const words = new Set(family.program.match(/\b[A-Za-z_][A-Za-z0-9_]*\b/g) ?? []);
  const free = RENAMES.filter((n) => !words.has(n));
  const names = new Map<string, string>();
  for (const p of family.params) {
    const pick = free.splice(rng.int(0, free.length - 1), 1)[0];
    if (pick !== undefined) names.set(p, pick);
  }
  return names;
}

function drawItems(seed: string): Item[] {
  const rng = seededRng(`dataset/${seed}`);
  const trained = FAMILIES.filter(isTrainedFamily);
  const items: Item[] = [];
  const instance = (family: Family, phrasing: number) =>
    renderInstance(family, phrasing, family.sample(rng), rng);
  // Half the training instances use a variation of a training phrasing (augment.ts).
  const trainingInstance = (family: Family): Instance => {
    const phrasings = trainingPhrasings(family);
    if (rng.next() < 0.5) return instance(family, rng.pick(phrasings));
    const varied = renderInstance(
      family,
      -1,
      family.sample(rng),
      rng,
      variedPhrasing(family, phrasings, rng),
    );
    return instanceProblem(varied) === null ? varied : instance(family, rng.pick(phrasings));
  };
  for (let i = 0; i < TRAINING.solves + TRAINING.heldOutSolves; i++) {
    const family = rng.pick(trained);
    const heldOut = i >= TRAINING.solves;
    items.push({
      kind: "solve",
      split: heldOut ? 1 : 0,
      method: family.method,
      instance: heldOut ? instance(family, heldOutPhrasing(family)) : trainingInstance(family),
      maxTokens: rng.pick(BUDGETS),
      samples: rng.pick(SAMPLE_COUNTS),
    });
  }
  for (let i = 0; i < TRAINING.grafts; i++) {
    const family = rng.pick(trained);
    let sibling = instance(family, rng.pick(trainingPhrasings(family)));
    let query = trainingInstance(family);
    if (rng.next() < 0.5) {
      const names = renaming(family, rng);
      sibling = renamed(sibling, names);
      query = renamed(query, names);
    }
    items.push({
      kind: "graft",
      split: 0,
      method: family.method,
      sibling,
      instance: query,
      synthetic: false,
    });
  }
  items.push(...syntheticGrafts(rng));
  items.push(...mutatedGrafts(rng, trained, instance));
  return items;
}

/**
 * Grafts on trained families whose block holds a changed program (synthetic.ts mutatedProgram):
 * the query's right final part re-uses the block's program, not the family's own, so the model
 * learns that the block wins over what it remembers. Half with the parameters renamed.
 */
function mutatedGrafts(
  rng: Rng,
  trained: readonly Family[],
  instance: (family: Family, phrasing: number) => Instance,
): Item[] {
  const pairs: { family: Family; sibling: Instance; query: Instance }[] = [];
  while (pairs.length < TRAINING.mutatedGrafts * 1.25) {
    const family = rng.pick(trained);
    const body = mutatedProgram(family.program, rng);
    if (body === null) continue;
    const phrasing = rng.pick(trainingPhrasings(family));
    const withBody = (i: Instance): Instance => ({
      ...i,
      program: `${i.program.split("\n")[0]}\n${body.trim()}`,
    });
    let sibling = withBody(instance(family, phrasing));
    let query = withBody(
      instance(family, rng.next() < 0.75 ? phrasing : rng.pick(trainingPhrasings(family))),
    );
    if (instanceProblem(sibling) !== null || instanceProblem(query) !== null) continue;
    if (rng.next() < 0.5) {
      const names = renaming(family, rng);
      sibling = renamed(sibling, names);
      query = renamed(query, names);
    }
    pairs.push({ family, sibling, query });
  }
  return graftItems(pairs, TRAINING.mutatedGrafts);
}

/**
 * The first `count` pairs whose programs both print a short answer (python3 runs them), as graft
 * items with those answers.
 */
function graftItems(pairs: { family: Family; sibling: Instance; query: Instance }[], count: number): Item[] {
  const answers = runPrograms(pairs.flatMap((p) => [p.sibling, p.query]));
  const items: Item[] = [];
  pairs.forEach((p, k) => {
    const [a, b] = [answers[2 * k], answers[2 * k + 1]];
    if (items.length >= count || !a || !b || a.length > 24 || b.length > 24) return;
    items.push({
      kind: "graft",
      split: 0,
      method: p.family.method,
      sibling: { ...p.sibling, answer: a },
      instance: { ...p.query, answer: b },
      synthetic: true,
    });
  });
  return items;
}

/**
 * Grafts on synthetic families (synthetic.ts): a sibling's block and a query of the same random
 * family with new numbers, answers from python3. Their programs are random, so only copying the
 * block's program completes them. Pairs whose program fails or prints a long answer are redrawn.
 */
function syntheticGrafts(rng: Rng): Item[] {
  const pairs: { family: Family; sibling: Instance; query: Instance }[] = [];
  for (let i = 0; pairs.length < TRAINING.syntheticGrafts * 1.25; i++) {
    const family = syntheticFamily(`synthetic-${i}`, rng);
    for (let j = 0; j < 2; j++) {
      const sibling = renderInstance(family, 0, family.sample(rng), rng);
      const text = family.phrasings[0] as string;
      const query = renderInstance(
        family,
        -1,
        family.sample(rng),
        rng,
        rng.next() < 0.25 ? decorate(text, rng) : text,
      );
      if (instanceProblem(sibling) === null && instanceProblem(query) === null)
        pairs.push({ family, sibling, query });
    }
  }
  return graftItems(pairs, TRAINING.syntheticGrafts);
}

/** The texts the vocabulary is learned from (a sample of the transcripts, rendered). */
function corpusOf(items: Item[]): string[] {
  const texts: string[] = [];
  const solves = items.filter((i) => i.kind === "solve").slice(0, 4000);
  const grafts = items.filter((i) => i.kind === "graft" && !i.synthetic).slice(0, 2000);
  for (const item of [...solves, ...grafts]) {
    if (item.kind === "solve") {
      const t = solveTexts(item.method, item.instance, item.maxTokens, item.samples);
      texts.push(t.problem, t.reasoning, t.finalPrompt, t.final);
    } else texts.push(blockTextOf(item.method, item.sibling), item.instance.problem, item.instance.program);
  }
  return texts;
}

/**
 * Prompts for the parity test (llama.cpp against PyTorch), two per transcript: cut inside a trained
 * target (the next token nearly certain) and inside prose that is never a target (the problem, the
 * block's text), where the next token's distribution is spread.
 */
function referencePrompts(
  kind: Item["kind"],
  t: Tokenized,
  at: number,
): { name: string; tokens: number[] }[] {
  const ids = t.tokens.map(Number);
  const [first, last] = [t.targets[0], t.targets.at(-1)] as [[number, number], [number, number]];
  const cuts: [string, number][] =
    kind === "solve"
      ? [
          ["prose", Math.floor(first[0] * 0.8)],
          [
            at % 4 === 0 ? "reasoning" : "final",
            Math.floor(at % 4 === 0 ? (first[0] + first[1]) / 2 : (last[0] + last[1]) / 2),
          ],
        ]
      : [
          ["block", Math.floor(first[0] * 0.5)],
          ["final", Math.floor((first[0] + first[1]) / 2)],
        ];
  return cuts.map(([where, n]) => ({ name: `${kind}-${at / 2}-${where}`, tokens: ids.slice(0, n) }));
}

async function main() {
  const out = resolve(argValue("--out", ".train/data"));
  const seed = argValue("--seed", String(TRAINING.seed));
  mkdirSync(out, { recursive: true });
  const t0 = performance.now();
  const items = drawItems(seed);
  const vocab = trainVocabulary(corpusOf(items), MODEL_SPEC.vocab);
  writeFileSync(
    join(out, "vocab.json"),
    JSON.stringify({
      tokens: vocab.tokens,
      scores: [...vocab.scores],
      types: [...vocab.types],
      bos: vocab.bos,
      eos: vocab.eos,
      unknown: vocab.unknown,
    }),
  );
  const gguf = join(out, "tokenizer.gguf");
  writeSyntheticModel(gguf, MODEL_SPEC, "tokenizer", undefined, { ...vocab, chatTemplate: CHAT_TEMPLATE });
  console.error(
    `dataset: ${items.length} transcripts drawn, vocabulary of ${vocab.tokens.length} learned (${Math.round(performance.now() - t0)} ms)`,
  );

  const llama = await getLlama({ gpu: false });
  const model = await llama.loadModel({ modelPath: gguf });
  try {
    const wrapper = resolveChatWrapper(model);
    if (wrapper?.wrapperName !== "ChatML")
      throw new Error(
        `node-llama-cpp resolved the chat template to ${wrapper?.wrapperName ?? "nothing"}, not ChatML`,
      );
    const tokenizer = new TranscriptTokenizer(model);
    const chunks: Uint16Array[] = [];
    const index: number[] = [];
    let offset = 0;
    let dropped = 0;
    const references: { name: string; tokens: number[] }[] = [];
    for (const item of items) {
      let t: Tokenized;
      if (item.kind === "solve") {
        const texts = solveTexts(item.method, item.instance, item.maxTokens, item.samples);
        if (
          item.instance.program.length > texts.limits.programChars ||
          item.instance.answer.length > texts.limits.answerChars
        ) {
          dropped++;
          continue;
        }
        t = tokenizer.solve(texts);
      } else t = tokenizer.graft(blockTextOf(item.method, item.sibling), item.instance);
      if (t.tokens.length > TRAINING.trainContext) {
        dropped++;
        continue;
      }
      if (
        (item.split === 1 && references.length < 8) ||
        (item.kind === "graft" && references.length >= 8 && references.length < 12)
      )
        references.push(...referencePrompts(item.kind, t, references.length));
      const [a, b] = t.targets;
      index.push(offset, t.tokens.length, a?.[0] ?? 0, a?.[1] ?? 0, b?.[0] ?? 0, b?.[1] ?? 0, item.split);
      chunks.push(Uint16Array.from(t.tokens.map(Number)));
      offset += t.tokens.length;
    }
    const tokens = new Uint16Array(offset);
    let at = 0;
    for (const c of chunks) {
      tokens.set(c, at);
      at += c.length;
    }
    writeFileSync(join(out, "tokens.u16.gz"), gzipSync(tokens));
    writeFileSync(join(out, "index.i32.gz"), gzipSync(Int32Array.from(index)));
    const trainedFamilies = FAMILIES.filter(isTrainedFamily).map((f) => f.id);
    writeFileSync(
      join(out, "dataset.json"),
      `${JSON.stringify(
        {
          seed,
          spec: {
            ...MODEL_SPEC,
            trainContext: TRAINING.trainContext,
            ropeBase: TRAINING.ropeBase,
            rmsEps: TRAINING.rmsEps,
          },
          training: TRAINING,
          transcripts: index.length / 7,
          tokens: offset,
          dropped,
          trainedFamilies,
          heldOutFamilies: FAMILIES.filter((f) => !isTrainedFamily(f)).map((f) => f.id),
          referencePrompts: references,
        },
        null,
        1,
      )}\n`,
    );
    console.error(
      `dataset: ${index.length / 7} transcripts, ${offset} tokens (${dropped} left out: over the limits or the context), ` +
        `${trainedFamilies.length} trained families, in ${Math.round(performance.now() - t0)} ms -> ${out}`,
    );
  } finally {
    await model.dispose();
    await llama.dispose();
  }
}

await main();
