/**
 * What a graft evaluates after the block's text (edge/services/block-text.ts): the query, its
 * numbers, and the request for the final part, the same JSON `{answer, program}` a solve ends with.
 * The embedded model is trained on exactly this text (tools/model/transcripts.ts). Runtime-neutral.
 */

/** The text appended to a block for a query whose numbers, as written, are `params`. */
export function renderGraftQuery(problem: string, params: readonly string[]): string {
  return (
    `\nQuery:\n${problem.replace(/\r\n?/g, "\n").trim()}\n\n` +
    `Final part, as JSON {"answer": ..., "program": ...}, for the query. PARAMS = [${params.join(",")}].\n`
  );
}

/** The final part as the model writes it (the key order and spacing the solve's grammar allows). */
export function renderFinalPart(answer: string, program: string): string {
  return `{"answer": ${JSON.stringify(answer)}, "program": ${JSON.stringify(program)}}`;
}
