/** Reading request bodies with a bound, in any runtime (Node, workerd). */

/**
 * Reads a body stream to its end, handing each chunk to `onChunk` (a running hash, say), and
 * returns its bytes; returns null, having cancelled the stream, as soon as it passes `maxBytes`.
 */
export async function readBounded(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  onChunk?: (chunk: Uint8Array) => void,
): Promise<Uint8Array | null> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    onChunk?.(value);
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
