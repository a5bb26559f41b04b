/**
 * The embedded SentencePiece-style vocabulary: `<unk> <s> </s>`, the 256 byte tokens
 * `<0xNN>` (so any UTF-8 text tokenizes through byte fallback), then word pieces, filled
 * deterministically up to the requested size.
 */

export const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, byte: 6 } as const;
const SPACE = "\u2581"; // SentencePiece's word-boundary marker

const WORDS = (
  "the of and to in is a that for it as with was on be by this are at from or an which have not " +
  "what how many much find value sum total number if then each per how solve compute answer " +
  "is are equals equal plus minus times divided product difference remainder square root cube " +
  "area perimeter volume radius circle triangle rectangle length width height side angle degrees " +
  "probability chance dice coin cards ways choose select arrange percent percentage interest rate " +
  "years months days hours minutes seconds speed distance time km miles meters price cost costs " +
  "dollars cents buys sells profit discount average mean median integer integers prime primes " +
  "divisible gcd lcm factor factors multiple sequence term terms series first second third last " +
  "next digits digit even odd positive negative x y z n k equation equations system roots root " +
  "real solution solutions function f g apples oranges students class boxes balls red blue green"
).split(/\s+/);

/** Builds a vocabulary of exactly `size` pieces with scores and token types. */
export function buildVocabulary(size: number): { tokens: string[]; scores: Float32Array; types: Int32Array } {
  const minimum = 3 + 256 + 2;
  if (!Number.isInteger(size) || size < minimum)
    throw new Error(`vocabulary size must be an integer >= ${minimum}`);
  const tokens: string[] = ["<unk>", "<s>", "</s>"];
  const types: number[] = [TOKEN_TYPE.unknown, TOKEN_TYPE.control, TOKEN_TYPE.control];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(TOKEN_TYPE.byte);
  }
  const seen = new Set(tokens);
  const push = (piece: string) => {
    if (tokens.length >= size || seen.has(piece)) return;
    seen.add(piece);
    tokens.push(piece);
    types.push(TOKEN_TYPE.normal);
  };
  const printable: string[] = [];
  for (let c = 33; c < 127; c++) printable.push(String.fromCharCode(c));
  push(SPACE);
  for (const ch of printable) push(ch);
  for (const ch of printable) push(SPACE + ch);
  for (const w of WORDS) push(SPACE + w);
  for (const w of WORDS) push(w);
  // Fill the rest with letter and digit n-grams, with and without the word marker.
  const alphabet = "etaoinshrdlcumwfgypbvkjxqz0123456789";
  for (let n = 2; tokens.length < size; n++) {
    const limit = alphabet.length ** n;
    for (let i = 0; i < limit && tokens.length < size; i++) {
      let piece = "";
      for (let k = 0, v = i; k < n; k++, v = Math.floor(v / alphabet.length))
        piece += alphabet[v % alphabet.length];
      push(SPACE + piece);
      push(piece);
    }
  }
  // Longer pieces score higher so the tokenizer prefers them; specials and bytes score 0.
  const scores = new Float32Array(size);
  for (let i = 0; i < size; i++) scores[i] = types[i] === TOKEN_TYPE.normal ? -i / size : 0;
  return { tokens, scores, types: Int32Array.from(types) };
}
