/**
 * The text a problem's block is prefilled from. Fixed and versioned: the same solution always
 * renders to the same bytes, so the block (named by the SHA-256 of its state) is reproducible and
 * a re-deposit is idempotent on the GPU node. A change to this rendering is a new version and
 * makes new blocks; old ones stay valid for what they were made from.
 *
 * Version 1, exactly (each `{...}` is the field with trailing whitespace removed and CRLF as LF):
 *
 * ```
 * Problem:
 * {problem}
 *
 * Worked solution:
 * {solution}
 *
 * Program (Python; PARAMS holds the problem's numbers in order):
 * ```python
 * {program}
 * ```
 *
 * Answer: {answer}
 *
 * ```
 *
 * (one trailing newline after the answer line). A graft appends the query after this text.
 */

export const BLOCK_TEXT_VERSION = 1;

const FENCE = "```";

function clean(text: string): string {
  return text.replace(/\r\n?/g, "\n").trimEnd();
}

/** Renders a verified solution as block text (version 1, above). */
export function renderBlockText(input: {
  problem: string;
  solution: string;
  program: string;
  answer: string;
}): string {
  return [
    "Problem:",
    clean(input.problem),
    "",
    "Worked solution:",
    clean(input.solution),
    "",
    "Program (Python; PARAMS holds the problem's numbers in order):",
    `${FENCE}python`,
    clean(input.program),
    FENCE,
    "",
    `Answer: ${clean(input.answer)}`,
    "",
  ].join("\n");
}
