/**
 * The final part of a solve's sample or of a graft: a JSON object {answer, program} generated under a JSON-schema
 * grammar. The grammar keeps every prefix valid, so a part cut off by the token budget is closed
 * here (incomplete escape dropped, open string and object closed, missing fields empty): every
 * sample parses.
 */
import { z } from "zod";

/** Character limits of the two fields, told to the model and enforced by the grammar. */
export interface FinalLimits {
  answerChars: number;
  programChars: number;
}

/** The JSON schema of the final part (node-llama-cpp's GbnfJsonSchema subset). */
export function finalSchema(limits: FinalLimits) {
  return {
    type: "object",
    properties: {
      answer: { type: "string", maxLength: limits.answerChars },
      program: { type: "string", maxLength: limits.programChars },
    },
  } as const;
}

const finalShape = z.object({ answer: z.string().default(""), program: z.string().default("") });

/** Suffixes that close a grammar-valid prefix after its open string (if any) is closed. */
const CLOSERS = [
  "",
  "}",
  '"program":""}',
  ',"program":""}',
  ':""}',
  '""}',
  ':"","program":""}',
  '"","program":""}',
  '"answer":"","program":""}',
  '{"answer":"","program":""}',
];

/** Parses a final part, closing it first when it was cut off; `truncated` says whether it was. */
export function parseFinal(text: string): { answer: string; program: string; truncated: boolean } {
  const whole = tryParse(text);
  if (whole) return { ...whole, truncated: false };
  const closed = closeString(text);
  for (const suffix of CLOSERS) {
    const parsed = tryParse(closed + suffix);
    if (parsed) return { ...parsed, truncated: true };
  }
  return { answer: "", program: "", truncated: true };
}

function tryParse(text: string): { answer: string; program: string } | null {
  try {
    const parsed = finalShape.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Drops an incomplete escape at the end and closes a string left open. */
function closeString(text: string): string {
  let inString = false;
  let escapeAt = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (escapeAt >= 0) {
      const done = text[escapeAt + 1] === "u" ? i - escapeAt >= 5 : true;
      if (done) escapeAt = -1;
    } else if (inString && c === "\\") escapeAt = i;
    else if (c === '"') inString = !inString;
  }
  if (escapeAt >= 0) return `${text.slice(0, escapeAt)}"`;
  return inString ? `${text}"` : text;
}
