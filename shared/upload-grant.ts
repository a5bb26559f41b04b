/**
 * Upload grants: the edge lets an admin push a large block file straight to the GPU node's import
 * endpoints, so the bytes never pass through the edge (a Worker has tight body limits). The grant
 * is a token the GPU node can check on its own with the shared secret (KVGRAFT_GPU_SECRET).
 * Runtime-neutral (Web Crypto only): the edge issues grants and the GPU node verifies them with this module.
 *
 * Token format (version 1): `kvgu1.<payload>.<mac>` where
 * - `payload` is base64url (no padding) of the UTF-8 JSON `UploadGrantClaims`;
 * - `mac` is lower-case hex HMAC-SHA256(secret, "kvgraft-upload-grant.v1\n" + payload).
 * The domain-separating prefix keeps a grant from ever equalling a request signature (whose
 * signed bytes start with an HTTP method).
 *
 * The client sends it as `Authorization: KvgraftUpload <token>` (or the header
 * `x-kvgraft-upload-grant: <token>`) on every request of one import: `POST /v1/imports` (whose
 * manifest.sha256 and sizeBytes must equal the grant's), `PUT /v1/imports/{id}/chunks/{i}`, and
 * `POST /v1/imports/{id}/commit`. The node accepts it only on those paths, before `exp`, for that
 * one block. After the commit, the admin registers the block with `POST /admin/blocks`.
 */
import { toHex } from "./hash.js";

export const UPLOAD_GRANT_PREFIX = "kvgu1";
export const UPLOAD_GRANT_HEADER = "x-kvgraft-upload-grant";
const MAC_CONTEXT = "kvgraft-upload-grant.v1\n";

/** What a grant allows. */
export interface UploadGrantClaims {
  v: 1;
  /** Random grant id (hex). */
  jti: string;
  /** The block the upload must produce (its state file's SHA-256) and that file's size. */
  sha256: string;
  sizeBytes: number;
  /** The problem the block will be registered for. */
  problemId: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
  /** The API key that asked for it. */
  keyId: string;
}

const encoder = new TextEncoder();

async function mac(secret: string, payload: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return toHex(new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(MAC_CONTEXT + payload))));
}

function base64url(text: string): string {
  let bin = "";
  for (const b of encoder.encode(text)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): string {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

/** Signs a grant. */
export async function createUploadGrant(secret: string, claims: UploadGrantClaims): Promise<string> {
  const payload = base64url(JSON.stringify(claims));
  return `${UPLOAD_GRANT_PREFIX}.${payload}.${await mac(secret, payload)}`;
}

/** Checks a grant's MAC and expiry (`nowMs` default now); returns its claims or why it fails. */
export async function verifyUploadGrant(
  secret: string,
  token: string,
  nowMs: number = Date.now(),
): Promise<
  | { ok: true; claims: UploadGrantClaims }
  | { ok: false; code: "grant_malformed" | "grant_invalid" | "grant_expired" }
> {
  const parts = token.split(".");
  const [prefix, payload, given] = parts;
  if (
    parts.length !== 3 ||
    prefix !== UPLOAD_GRANT_PREFIX ||
    !payload ||
    !given ||
    !/^[0-9a-f]{64}$/.test(given)
  )
    return { ok: false, code: "grant_malformed" };
  const expected = await mac(secret, payload);
  let diff = 0;
  for (let i = 0; i < 64; i++) diff |= expected.charCodeAt(i) ^ given.charCodeAt(i);
  if (diff !== 0) return { ok: false, code: "grant_invalid" };
  let claims: UploadGrantClaims;
  try {
    claims = JSON.parse(fromBase64url(payload)) as UploadGrantClaims;
  } catch {
    return { ok: false, code: "grant_malformed" };
  }
  if (claims.v !== 1) return { ok: false, code: "grant_malformed" };
  if (!(claims.exp * 1000 > nowMs)) return { ok: false, code: "grant_expired" };
  return { ok: true, claims };
}
