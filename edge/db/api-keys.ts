/** The `api_keys` table: stored keys (prefix and hash, never the plaintext), their roles and revocation. */
import { and, asc, eq, isNull } from "drizzle-orm";
import type { Database } from "./database.js";
import { newId } from "./ids.js";
import { type ApiKeyRole, apiKeys } from "./schema.js";

export type ApiKeyRow = typeof apiKeys.$inferSelect;

/** A stored key as listed to admins: never the hash. */
export interface ApiKeyInfo {
  id: string;
  prefix: string;
  role: ApiKeyRole;
  label: string;
  createdAt: Date;
  revokedAt: Date | null;
}

const infoColumns = {
  id: apiKeys.id,
  prefix: apiKeys.prefix,
  role: apiKeys.role,
  label: apiKeys.label,
  createdAt: apiKeys.createdAt,
  revokedAt: apiKeys.revokedAt,
};

/** Stores a key's prefix and hash; returns its new id. */
export async function insertApiKey(
  db: Database,
  input: { prefix: string; hash: string; role: ApiKeyRole; label: string },
): Promise<string> {
  const id = newId("key");
  await db.insert(apiKeys).values({ id, ...input });
  return id;
}

/** The stored key with this prefix, or null. */
export async function findApiKeyByPrefix(db: Database, prefix: string): Promise<ApiKeyRow | null> {
  const [row] = await db.select().from(apiKeys).where(eq(apiKeys.prefix, prefix));
  return row ?? null;
}

/** Marks a key revoked now (a revoked one keeps its first revocation time); null when there is no such key. */
export async function revokeApiKeyRow(db: Database, id: string): Promise<ApiKeyInfo | null> {
  await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)));
  const [row] = await db.select(infoColumns).from(apiKeys).where(eq(apiKeys.id, id));
  return row ?? null;
}

/** All keys, oldest first, without their hashes. */
export async function listApiKeyRows(db: Database): Promise<ApiKeyInfo[]> {
  return db.select(infoColumns).from(apiKeys).orderBy(asc(apiKeys.id));
}

/** Gives a key the admin role. */
export async function promoteToAdmin(db: Database, id: string): Promise<void> {
  await db.update(apiKeys).set({ role: "admin" }).where(eq(apiKeys.id, id));
}

/** The id of the oldest active admin key, or null. */
export async function firstActiveAdminKey(db: Database): Promise<string | null> {
  const [active] = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.role, "admin"), isNull(apiKeys.revokedAt)))
    .orderBy(asc(apiKeys.id))
    .limit(1);
  return active?.id ?? null;
}
