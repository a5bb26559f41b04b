/** Hashing helpers built on Web Crypto, so the same code runs in Node, workerd and browsers. */

const encoder = new TextEncoder();

/** Lower-case hex of a byte array. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** SHA-256 of bytes or UTF-8 text, as lower-case hex. */
export async function sha256Hex(data: Uint8Array | ArrayBuffer | string): Promise<string> {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return toHex(new Uint8Array(digest));
}

/** SHA-256 of a token-id sequence, hashed as little-endian uint32 values. */
export function sha256OfTokens(tokens: readonly number[]): Promise<string> {
  const buf = new Uint32Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) buf[i] = tokens[i] ?? 0;
  return sha256Hex(littleEndianBytes(buf));
}

/** Bytes of a typed array in little-endian order regardless of the host's byte order. */
export function littleEndianBytes(view: Uint32Array | Float32Array): Uint8Array {
  const out = new Uint8Array(view.length * 4);
  const dv = new DataView(out.buffer);
  if (view instanceof Float32Array)
    for (let i = 0; i < view.length; i++) dv.setFloat32(i * 4, view[i] ?? 0, true);
  else for (let i = 0; i < view.length; i++) dv.setUint32(i * 4, view[i] ?? 0, true);
  return out;
}
