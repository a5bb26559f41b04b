/**
 * Edge-to-GPU request signing: HMAC-SHA256 with a shared secret over the method, the path with its
 * query string, a timestamp, a one-time nonce and the SHA-256 of the body. Verification rejects
 * skewed clocks and replays, and compares in constant time (`crypto.subtle.verify`).
 */

import { sha256Hex, toHex } from "./hash.js";

/** Header names the signature travels in. */
export const SIGNATURE_HEADERS = {
  timestamp: "x-kvgraft-timestamp",
  nonce: "x-kvgraft-nonce",
  contentSha256: "x-kvgraft-content-sha256",
  signature: "x-kvgraft-signature",
} as const;

/** Default tolerated clock difference between signer and verifier, in seconds. */
export const DEFAULT_MAX_SKEW_S = 300;

/** Stable codes for a rejected signature. */
export type SignatureErrorCode =
  | "signature_missing"
  | "signature_malformed"
  | "signature_skewed"
  | "signature_replayed"
  | "signature_invalid"
  | "body_hash_mismatch";

export type VerifyResult = { ok: true } | { ok: false; code: SignatureErrorCode; message: string };

const encoder = new TextEncoder();
const HEX64 = /^[0-9a-f]{64}$/;
const NONCE = /^[0-9a-f]{32}$/;
const TIMESTAMP = /^\d{1,12}$/;

function hmacKey(secret: string | Uint8Array, usage: "sign" | "verify") {
  const bytes = typeof secret === "string" ? encoder.encode(secret) : secret;
  if (bytes.length === 0) throw new TypeError("signing secret must not be empty");
  return crypto.subtle.importKey(
    "raw",
    bytes as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    [usage],
  );
}

/** The exact bytes that are signed. */
function canonical(method: string, path: string, timestamp: string, nonce: string, bodySha256: string) {
  return encoder.encode(`${method.toUpperCase()}\n${path}\n${timestamp}\n${nonce}\n${bodySha256}`);
}

function hexToBytes(hex: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/**
 * Signature headers for one request. `path` includes the query string exactly as sent; `now` is
 * milliseconds since the epoch (default `Date.now()`); `nonce` (32 hex digits) defaults to random.
 */
export async function signRequest(opts: {
  secret: string | Uint8Array;
  method: string;
  path: string;
  body?: string | Uint8Array;
  now?: number;
  nonce?: string;
}): Promise<Record<string, string>> {
  const timestamp = String(Math.floor((opts.now ?? Date.now()) / 1000));
  const nonce = opts.nonce ?? toHex(crypto.getRandomValues(new Uint8Array(16)));
  if (!NONCE.test(nonce)) throw new TypeError("nonce must be 32 lower-case hex digits");
  const bodySha256 = await sha256Hex(opts.body ?? "");
  const key = await hmacKey(opts.secret, "sign");
  const mac = await crypto.subtle.sign(
    "HMAC",
    key,
    canonical(opts.method, opts.path, timestamp, nonce, bodySha256),
  );
  return {
    [SIGNATURE_HEADERS.timestamp]: timestamp,
    [SIGNATURE_HEADERS.nonce]: nonce,
    [SIGNATURE_HEADERS.contentSha256]: bodySha256,
    [SIGNATURE_HEADERS.signature]: toHex(new Uint8Array(mac)),
  };
}

type Refused = Extract<VerifyResult, { ok: false }>;
const fail = (code: SignatureErrorCode, message: string): Refused => ({ ok: false, code, message });

/** Where the headers of a request come from. */
type HeaderSource = (name: string) => string | null | undefined;

/** A request whose signature headers are valid; its body is not checked yet. */
export interface SignedHeaders {
  ok: true;
  nonce: string;
  claimedSha256: string;
  nowMs: number;
  /** The signature's timestamp (seconds). */
  signedAtS: number;
}

/**
 * Checks a signed request. `bodySha256` is the hex SHA-256 of the body as received; `now` is
 * milliseconds since the epoch. The nonce is recorded only when everything else holds, so a forged
 * request cannot burn a legitimate nonce.
 */
export async function verifySignature(opts: {
  secret: string | Uint8Array;
  method: string;
  path: string;
  headers: HeaderSource;
  bodySha256: string;
  now?: number;
  maxSkewS?: number;
  nonces: NonceCache;
}): Promise<VerifyResult> {
  const signed = await verifySignatureHeaders(opts);
  return signed.ok ? verifySignedBody(signed, opts.bodySha256, opts.nonces) : signed;
}

/**
 * The part of the check that needs no body: headers, clock skew and the HMAC over the body hash
 * the request claims. A server runs it before reading a body, so an unsigned or forged request
 * costs it no more than its headers; `verifySignedBody` completes the check.
 */
export async function verifySignatureHeaders(opts: {
  secret: string | Uint8Array;
  method: string;
  path: string;
  headers: HeaderSource;
  now?: number;
  maxSkewS?: number;
}): Promise<SignedHeaders | Refused> {
  const timestamp = opts.headers(SIGNATURE_HEADERS.timestamp);
  const nonce = opts.headers(SIGNATURE_HEADERS.nonce);
  const claimedSha256 = opts.headers(SIGNATURE_HEADERS.contentSha256);
  const signature = opts.headers(SIGNATURE_HEADERS.signature);
  if (!timestamp || !nonce || !claimedSha256 || !signature)
    return fail("signature_missing", "request is not signed (x-kvgraft-* headers missing)");
  if (
    !TIMESTAMP.test(timestamp) ||
    !NONCE.test(nonce) ||
    !HEX64.test(claimedSha256) ||
    !HEX64.test(signature)
  )
    return fail("signature_malformed", "signature headers are malformed");

  const nowMs = opts.now ?? Date.now();
  const maxSkewS = opts.maxSkewS ?? DEFAULT_MAX_SKEW_S;
  const skew = Number(timestamp) - nowMs / 1000;
  if (Math.abs(skew) > maxSkewS)
    return fail("signature_skewed", `request timestamp is ${Math.round(skew)} s off (limit ${maxSkewS} s)`);

  const key = await hmacKey(opts.secret, "verify");
  const valid = await crypto.subtle.verify(
    "HMAC",
    key,
    hexToBytes(signature),
    canonical(opts.method, opts.path, timestamp, nonce, claimedSha256),
  );
  if (!valid) return fail("signature_invalid", "signature does not match the request");
  return { ok: true, nonce, claimedSha256, nowMs, signedAtS: Number(timestamp) };
}

/**
 * Completes `verifySignatureHeaders` once the body is read: it must hash to the signed value
 * (else it was altered in transit), and the nonce must be new; only then is it recorded.
 */
export function verifySignedBody(
  signed: SignedHeaders,
  bodySha256: string,
  nonces: NonceCache,
): VerifyResult {
  if (signed.claimedSha256 !== bodySha256.toLowerCase())
    return fail("body_hash_mismatch", "body does not match its signed SHA-256");
  if (nonces.has(signed.nonce, signed.nowMs)) return fail("signature_replayed", "nonce was already used");
  nonces.add(signed.nonce, signed.nowMs, signed.signedAtS);
  return { ok: true };
}

/**
 * Nonces seen recently, bounded in size. An entry lives `ttlS` seconds (default twice the maximum
 * skew: a request stamped at the far future edge stays acceptable that long). When full, expired
 * entries go first, then the oldest ones.
 */
export class NonceCache {
  readonly maxEntries: number;
  readonly ttlMs: number;
  /** nonce -> expiry (ms); Map order is insertion order, which is expiry order for a fixed TTL. */
  private readonly entries = new Map<string, number>();

  constructor(opts: { maxEntries?: number; ttlS?: number } = {}) {
    this.maxEntries = opts.maxEntries ?? 100_000;
    this.ttlMs = (opts.ttlS ?? 2 * DEFAULT_MAX_SKEW_S) * 1000;
    if (!(this.maxEntries >= 1) || !(this.ttlMs > 0))
      throw new RangeError("maxEntries and ttlS must be positive");
  }

  /** Number of entries held (expired ones included until evicted). */
  get size(): number {
    return this.entries.size;
  }

  /** The entries as [nonce, expiry in ms], oldest first (expired ones included until evicted). */
  recorded(): IterableIterator<[string, number]> {
    return this.entries.entries();
  }

  /** Whether `nonce` was added and has not expired at `now` (ms). */
  has(nonce: string, now = Date.now()): boolean {
    const expiry = this.entries.get(nonce);
    return expiry !== undefined && expiry > now;
  }

  /**
   * Records `nonce` at `now` (ms), evicting expired entries and then the oldest to stay bounded.
   * `_signedAtS`, the signature's timestamp, is for a log that persists nonces and must say which
   * signatures it could not persist (gpu-node/server/nonce-log.ts); memory needs only `now`.
   */
  add(nonce: string, now = Date.now(), _signedAtS?: number): void {
    this.entries.delete(nonce);
    for (const [key, expiry] of this.entries) {
      if (expiry > now) break;
      this.entries.delete(key);
    }
    while (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
    this.entries.set(nonce, now + this.ttlMs);
  }
}
