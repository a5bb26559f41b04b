/**
 * The signed-request check of both services (shared/signing.ts): the signature's headers are
 * verified before the body is read, so an unsigned flood costs only its headers; the body is then
 * read once, bounded, and must hash to the signed value, and the nonce must be new. Handlers read
 * the buffered copy afterwards. Web APIs only (Node and Workers).
 */
import type { Context, MiddlewareHandler } from "hono";
import { readBounded } from "../body.js";
import { tooLarge, unauthorized } from "../errors.js";
import { sha256Hex } from "../hash.js";
import { type NonceCache, SIGNATURE_HEADERS, verifySignatureHeaders, verifySignedBody } from "../signing.js";

/** The largest body a request may have: a number, or one per request (per route, say). */
export type BodyBound = number | ((c: Context) => number);

const bound = (max: BodyBound, c: Context) => (typeof max === "number" ? max : max(c));
const bodyTooLarge = (max: number) => tooLarge("body_too_large", `The request body is over ${max} bytes.`);

/** Path and query string exactly as the client sent them (what the signature covers). */
export function signedPath(url: string): string {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
}

/** A 413 before anything is read when the declared Content-Length is over the bound. */
export function declaredLengthLimit(maxBytes: BodyBound): MiddlewareHandler {
  return async (c, next) => {
    const declared = c.req.header("content-length");
    const max = bound(maxBytes, c);
    if (declared !== undefined && !c.req.header("transfer-encoding") && Number(declared) > max)
      throw bodyTooLarge(max);
    await next();
  };
}

/**
 * Reads the body once, refusing it (413) past `maxBytes`, and puts the bytes back so that
 * handlers can read them again. Returns the body's SHA-256 (hex).
 */
export async function readBodyOnce(c: Context, maxBytes: number): Promise<string> {
  const bytes = await readBounded(c.req.raw.body, maxBytes);
  if (!bytes) throw bodyTooLarge(maxBytes);
  if (c.req.raw.body) c.req.raw = new Request(c.req.raw, { body: bytes as Uint8Array<ArrayBuffer> });
  return sha256Hex(bytes);
}

export interface SignatureAuthOptions {
  /** The secret signatures are checked with, or several (the current one and the one it replaces). */
  secret: string | readonly string[];
  /** Nonces seen (in memory, or a log on disk that survives restarts). */
  nonces: NonceCache;
  maxBodyBytes: BodyBound;
  maxSkewS?: number;
  /** Clock in ms, for tests. */
  now?: () => number;
  /**
   * Signatures stamped before this second are refused as replays: a service whose nonces live
   * only in memory passes its start time, since the process before it may have accepted them.
   */
  notBeforeS?: number;
}

/** Requires a valid HMAC signature over method, path, timestamp, nonce and body hash (401 otherwise). */
export function signatureAuth(options: SignatureAuthOptions): MiddlewareHandler {
  return async (c, next) => {
    const check = (secret: string) =>
      verifySignatureHeaders({
        secret,
        method: c.req.method,
        path: signedPath(c.req.url),
        headers: (name) => c.req.header(name),
        ...(options.now ? { now: options.now() } : {}),
        ...(options.maxSkewS !== undefined ? { maxSkewS: options.maxSkewS } : {}),
      });
    const [first = "", ...others] = typeof options.secret === "string" ? [options.secret] : options.secret;
    let signed = await check(first);
    // Another accepted secret (a rotation in progress) can only fix a signature that does not match.
    for (const secret of others)
      if (!signed.ok && signed.code === "signature_invalid") signed = await check(secret);
    if (!signed.ok) throw unauthorized(signed.code, signed.message);
    if (
      options.notBeforeS !== undefined &&
      Number(c.req.header(SIGNATURE_HEADERS.timestamp)) < options.notBeforeS
    )
      throw unauthorized("signature_replayed", "The request was signed before this service started.");
    const bodySha256 = await readBodyOnce(c, bound(options.maxBodyBytes, c));
    const verdict = verifySignedBody(signed, bodySha256, options.nonces);
    if (!verdict.ok) throw unauthorized(verdict.code, verdict.message);
    await next();
  };
}
