/**
 * API keys. A key is `kvg_<8-char prefix>_<32 random chars>` (base62); only the prefix and the
 * SHA-256 of the whole key are stored, and the plaintext is shown once at creation. Failures
 * carry distinct codes for logs, but one uniform message so a caller learns nothing from it.
 */
import { forbidden, notFound, unauthorized } from "../../shared/errors.js";
import { sha256Hex } from "../../shared/hash.js";
import {
  type ApiKeyInfo,
  findApiKeyByPrefix,
  firstActiveAdminKey,
  insertApiKey,
  listApiKeyRows,
  promoteToAdmin,
  revokeApiKeyRow,
} from "../db/api-keys.js";
import type { Database } from "../db/database.js";
import type { ApiKeyRole } from "../db/schema.js";

export type { ApiKeyInfo } from "../db/api-keys.js";

const PREFIX_LENGTH = 8;
const SECRET_LENGTH = 32;
const KEY_PATTERN = /^kvg_([0-9A-Za-z]{8})_[0-9A-Za-z]{32,128}$/;
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const AUTH_MESSAGE = "Missing or invalid API key.";
/** Compared against when the prefix is unknown, so that path does the same work as a wrong key. */
const DUMMY_HASH = "0".repeat(64);

/** Who is calling, once the bearer key checks out. */
export interface Principal {
  keyId: string;
  role: ApiKeyRole;
}

/** Creates a key and returns its plaintext, the only time it is available. */
export async function createApiKey(
  db: Database,
  input: { role: ApiKeyRole; label: string },
): Promise<{ id: string; key: string; prefix: string }> {
  const prefix = randomBase62(PREFIX_LENGTH);
  const key = `kvg_${prefix}_${randomBase62(SECRET_LENGTH)}`;
  const id = await insertApiKey(db, {
    prefix,
    hash: await sha256Hex(key),
    role: input.role,
    label: input.label,
  });
  return { id, key, prefix };
}

/**
 * Checks an `Authorization` header. Throws 401 with code `auth_missing`, `auth_malformed`,
 * `auth_invalid` or `auth_revoked`; revocation is only reported to a caller who holds the key.
 */
export async function authenticateBearer(
  db: Database,
  authorizationHeader: string | null | undefined,
): Promise<Principal> {
  const header = authorizationHeader?.trim() ?? "";
  if (header === "") throw unauthorized("auth_missing", AUTH_MESSAGE);
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  const token = match?.[1];
  const parsed = token === undefined ? null : parseKey(token);
  if (token === undefined || parsed === null) throw unauthorized("auth_malformed", AUTH_MESSAGE);
  const row = await findApiKeyByPrefix(db, parsed.prefix);
  const hash = await sha256Hex(token);
  const equal = constantTimeEqual(hash, row?.hash ?? DUMMY_HASH);
  if (!row || !equal) throw unauthorized("auth_invalid", AUTH_MESSAGE);
  if (row.revokedAt !== null) throw unauthorized("auth_revoked", AUTH_MESSAGE);
  return { keyId: row.id, role: row.role };
}

/** Throws 403 `forbidden_role` unless the principal has the role (admin implies public). */
export function requireRole(principal: Principal, role: ApiKeyRole): void {
  if (role === "admin" && principal.role !== "admin")
    throw forbidden("forbidden_role", "This operation needs an admin key.");
}

/** Revokes a key; revoking it again keeps the first revocation time. */
export async function revokeApiKey(db: Database, id: string): Promise<ApiKeyInfo> {
  const row = await revokeApiKeyRow(db, id);
  if (!row) throw notFound("api_key_not_found", "No API key with this id.");
  return row;
}

/** All keys, oldest first, without their hashes. */
export async function listApiKeys(db: Database): Promise<ApiKeyInfo[]> {
  return listApiKeyRows(db);
}

/**
 * Makes sure an admin can get in. With a configured key, stores its hash as an admin key (a
 * configured key that was revoked, or whose prefix belongs to another key, stops the start).
 * Without one, creates an admin key if no active one exists and returns its plaintext to print
 * once; otherwise returns `key: null`.
 */
export async function ensureAdminKey(
  db: Database,
  configuredKey?: string,
): Promise<{ id: string; key: string | null }> {
  if (configuredKey !== undefined) {
    const parsed = parseKey(configuredKey);
    if (!parsed)
      throw new Error("The configured admin key does not have the form kvg_<8 chars>_<32+ chars>.");
    const hash = await sha256Hex(configuredKey);
    const row = await findApiKeyByPrefix(db, parsed.prefix);
    if (!row) {
      const id = await insertApiKey(db, {
        prefix: parsed.prefix,
        hash,
        role: "admin",
        label: "configured admin",
      });
      return { id, key: null };
    }
    if (!constantTimeEqual(hash, row.hash))
      throw new Error("The configured admin key's prefix belongs to a different stored key.");
    if (row.revokedAt !== null) throw new Error("The configured admin key was revoked; configure a new one.");
    if (row.role !== "admin") await promoteToAdmin(db, row.id);
    return { id: row.id, key: null };
  }
  const active = await firstActiveAdminKey(db);
  if (active !== null) return { id: active, key: null };
  const created = await createApiKey(db, { role: "admin", label: "generated admin" });
  return { id: created.id, key: created.key };
}

/**
 * Compares two strings in time that depends only on their lengths, not on where they differ
 * (Workers have no `crypto.timingSafeEqual`). Used on equal-length hex hashes.
 */
export function constantTimeEqual(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

function parseKey(token: string): { prefix: string } | null {
  const prefix = KEY_PATTERN.exec(token)?.[1];
  return prefix === undefined ? null : { prefix };
}

/** Uniform base62 characters: bytes at or above 248 (= 4 * 62) are redrawn to avoid modulo bias. */
function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const b of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}
