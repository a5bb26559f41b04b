/**
 * The embedded model's vocabulary: a SentencePiece-style table that llama.cpp's `llama` tokenizer
 * loads (`<unk> <s> </s>`, the chat template's two control tokens, the 256 byte tokens for byte
 * fallback, then pieces learned by byte-pair merges over the training transcripts). Pieces never
 * contain a digit next to anything (every digit is its own token, so numbers are read and copied
 * digit by digit) nor a newline; scores fall with merge order, so llama.cpp's highest-score-first
 * merging reproduces the learned merges.
 */
import { TOKEN_TYPE } from "../../gpu-node/synth/vocab.js";

/** SentencePiece's word-boundary marker, which stands for a space. */
export const SPACE = "\u2581";
export const CHAT_START = "<|im_start|>";
export const CHAT_END = "<|im_end|>";

export interface Vocabulary {
  tokens: string[];
  scores: Float32Array;
  types: Int32Array;
  bos: number;
  /** `<|im_end|>`: the end of every turn, and the end of generation. */
  eos: number;
  unknown: number;
}

/** How llama.cpp's SPM tokenizer sees text: spaces as the marker, with one in front. */
function spmText(text: string): string {
  return SPACE + text.replaceAll(" ", SPACE);
}

/** The stretches merges stay inside: a newline, a digit, or marker-led runs of anything else. */
const SEGMENT = new RegExp(`\\n|\\d|${SPACE}+[^${SPACE}\\d\\n]*|[^${SPACE}\\d\\n]+`, "gu");

/** Learns a vocabulary of exactly `size` entries from `corpus` (deterministic for the same input). */
export function trainVocabulary(corpus: readonly string[], size: number): Vocabulary {
  const tokens: string[] = ["<unk>", "<s>", "</s>", CHAT_START, CHAT_END];
  const types: number[] = [
    TOKEN_TYPE.unknown,
    TOKEN_TYPE.control,
    TOKEN_TYPE.control,
    TOKEN_TYPE.control,
    TOKEN_TYPE.control,
  ];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(TOKEN_TYPE.byte);
  }
  const seen = new Set(tokens);
  const add = (piece: string) => {
    if (seen.has(piece) || tokens.length >= size) return false;
    seen.add(piece);
    tokens.push(piece);
    types.push(TOKEN_TYPE.normal);
    return true;
  };
  // Segment frequencies; every character seen becomes a piece (rarest last).
  const words = new Map<string, number>();
  const chars = new Map<string, number>();
  for (const text of corpus)
    for (const m of spmText(text).matchAll(SEGMENT)) {
      words.set(m[0], (words.get(m[0]) ?? 0) + 1);
      for (const c of m[0]) chars.set(c, (chars.get(c) ?? 0) + 1);
    }
  for (const [c] of [...chars].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))) add(c);
  const split = [...words].map(([w, n]) => ({ symbols: [...w], n }));
  while (tokens.length < size) {
    const pairs = new Map<string, number>();
    for (const { symbols, n } of split)
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = `${symbols[i]}\u0000${symbols[i + 1]}`;
        pairs.set(key, (pairs.get(key) ?? 0) + n);
      }
    let best: string | null = null;
    let bestCount = 0;
    for (const [key, count] of pairs)
      if (count > bestCount || (count === bestCount && best !== null && key < best)) {
        best = key;
        bestCount = count;
      }
    if (best === null || bestCount < 2) break;
    const [left, right] = best.split("\u0000") as [string, string];
    const merged = left + right;
    add(merged);
    for (const word of split) {
      const s = word.symbols;
      for (let i = 0; i + 1 < s.length; i++) if (s[i] === left && s[i + 1] === right) s.splice(i, 2, merged);
    }
  }
  // Pad with unused pieces if the corpus ran out of merges (keeps the size fixed).
  for (let k = 0; tokens.length < size; k++) add(`<unused${k}>`);
  const scores = new Float32Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) scores[i] = types[i] === TOKEN_TYPE.normal ? -i : 0;
  return {
    tokens,
    scores,
    types: Int32Array.from(types),
    bos: 1,
    eos: tokens.indexOf(CHAT_END),
    unknown: 0,
  };
}
