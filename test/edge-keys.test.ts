import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Database, migrateDatabase, type OpenDatabase, openDatabase } from "../edge/db/client.js";
import {
  authenticateBearer,
  constantTimeEqual,
  createApiKey,
  ensureAdminKey,
  listApiKeys,
  requireRole,
  revokeApiKey,
} from "../edge/services/keys.service.js";
import { DomainError } from "../shared/errors.js";
import { sha256Hex } from "../shared/hash.js";

let dir: string;
let handle: OpenDatabase;
let db: Database;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "kvgraft-edge-keys-"));
  handle = await openDatabase({ url: `file:${join(dir, "edge.db")}` });
  db = handle.db;
  await migrateDatabase(db);
});

afterEach(() => {
  handle.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The 401 a header gets; every one must carry the same message whatever its code. */
async function authError(header: string | null | undefined): Promise<DomainError> {
  const err = await authenticateBearer(db, header).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DomainError);
  const domain = err as DomainError;
  expect(domain.status).toBe(401);
  expect(domain.message).toBe("Missing or invalid API key.");
  return domain;
}

describe("API keys", () => {
  it("creates a key in the documented format and stores only its prefix and hash", async () => {
    const created = await createApiKey(db, { role: "public", label: "tests" });
    expect(created.key).toMatch(/^kvg_[0-9A-Za-z]{8}_[0-9A-Za-z]{32}$/);
    expect(created.key.slice(4, 12)).toBe(created.prefix);
    const rows = (await handle.client.execute("SELECT * FROM api_keys")).rows;
    expect(rows).toHaveLength(1);
    expect(rows[0]?.hash).toBe(await sha256Hex(created.key));
    expect(JSON.stringify(rows)).not.toContain(created.key.slice(13));
    const listed = await listApiKeys(db);
    expect(listed).toEqual([
      {
        id: created.id,
        prefix: created.prefix,
        role: "public",
        label: "tests",
        createdAt: expect.any(Date),
        revokedAt: null,
      },
    ]);
    expect(Object.keys(listed[0] ?? {})).not.toContain("hash");
  });

  it("authenticates a bearer key and enforces roles", async () => {
    const pub = await createApiKey(db, { role: "public", label: "p" });
    const admin = await createApiKey(db, { role: "admin", label: "a" });
    const principal = await authenticateBearer(db, `Bearer ${pub.key}`);
    expect(principal).toEqual({ keyId: pub.id, role: "public" });
    expect(await authenticateBearer(db, `bearer   ${admin.key}  `)).toEqual({
      keyId: admin.id,
      role: "admin",
    });
    expect(() => requireRole(principal, "admin")).toThrow(
      expect.objectContaining({ status: 403, code: "forbidden_role" }),
    );
    expect(() => requireRole(principal, "public")).not.toThrow();
    expect(() => requireRole({ keyId: admin.id, role: "admin" }, "admin")).not.toThrow();
  });

  it("tells missing, malformed, invalid and revoked keys apart only by code", async () => {
    const key = await createApiKey(db, { role: "public", label: "p" });
    expect((await authError(undefined)).code).toBe("auth_missing");
    expect((await authError("")).code).toBe("auth_missing");
    for (const malformed of [
      key.key,
      `Basic ${key.key}`,
      "Bearer",
      "Bearer kvg_short_x",
      `Bearer ${key.key} extra`,
      `Bearer ${key.key.replace("kvg_", "kvx_")}`,
      `Bearer kvg_${key.prefix}_${"!".repeat(32)}`,
      `Bearer ${key.key}${"a".repeat(200)}`,
    ])
      expect((await authError(malformed)).code, malformed).toBe("auth_malformed");
    // a right prefix with a wrong secret, and an unknown prefix, both run the hash comparison
    const wrongSecret = `kvg_${key.prefix}_${"A".repeat(32)}`;
    expect((await authError(`Bearer ${wrongSecret}`)).code).toBe("auth_invalid");
    expect((await authError(`Bearer kvg_ZZZZZZZZ_${"A".repeat(32)}`)).code).toBe("auth_invalid");
    await revokeApiKey(db, key.id);
    expect((await authError(`Bearer ${key.key}`)).code).toBe("auth_revoked");
    // revocation is not revealed to someone who does not hold the key
    expect((await authError(`Bearer ${wrongSecret}`)).code).toBe("auth_invalid");
  });

  it("revokes once and reports unknown ids", async () => {
    const key = await createApiKey(db, { role: "public", label: "p" });
    const first = await revokeApiKey(db, key.id);
    expect(first.revokedAt).toBeInstanceOf(Date);
    expect((await revokeApiKey(db, key.id)).revokedAt).toEqual(first.revokedAt);
    await expect(revokeApiKey(db, "key_missing")).rejects.toMatchObject({
      status: 404,
      code: "api_key_not_found",
    });
  });

  it("compares in constant time over the whole length", () => {
    const a = "f".repeat(64);
    expect(constantTimeEqual(a, a)).toBe(true);
    expect(constantTimeEqual(a, `${"f".repeat(63)}e`)).toBe(false);
    expect(constantTimeEqual(a, `e${"f".repeat(63)}`)).toBe(false);
    expect(constantTimeEqual(a, "f".repeat(63))).toBe(false);
    expect(constantTimeEqual("", "")).toBe(true);
    expect(constantTimeEqual("", "a")).toBe(false);
  });
});

describe("ensureAdminKey", () => {
  it("creates one admin key when none exists, and only once", async () => {
    const first = await ensureAdminKey(db);
    expect(first.key).toMatch(/^kvg_/);
    expect(await authenticateBearer(db, `Bearer ${first.key}`)).toEqual({ keyId: first.id, role: "admin" });
    expect(await ensureAdminKey(db)).toEqual({ id: first.id, key: null });
    await revokeApiKey(db, first.id);
    const replacement = await ensureAdminKey(db);
    expect(replacement.key).toMatch(/^kvg_/);
    expect(replacement.id).not.toBe(first.id);
  });

  it("stores a configured key as admin and keeps it admin", async () => {
    const configured = `kvg_Config01_${"x".repeat(40)}`;
    const stored = await ensureAdminKey(db, configured);
    expect(stored.key).toBeNull();
    expect(await authenticateBearer(db, `Bearer ${configured}`)).toEqual({ keyId: stored.id, role: "admin" });
    await handle.client.execute({
      sql: "UPDATE api_keys SET role = 'public' WHERE id = ?",
      args: [stored.id],
    });
    expect(await ensureAdminKey(db, configured)).toEqual({ id: stored.id, key: null });
    expect((await authenticateBearer(db, `Bearer ${configured}`)).role).toBe("admin");
    expect(await listApiKeys(db)).toHaveLength(1);
  });

  it("refuses a malformed, clashing or revoked configured key", async () => {
    await expect(ensureAdminKey(db, "not-a-key")).rejects.toThrow(/form kvg_/);
    const configured = `kvg_Config01_${"x".repeat(40)}`;
    const stored = await ensureAdminKey(db, configured);
    await expect(ensureAdminKey(db, `kvg_Config01_${"y".repeat(40)}`)).rejects.toThrow(
      /different stored key/,
    );
    await revokeApiKey(db, stored.id);
    await expect(ensureAdminKey(db, configured)).rejects.toThrow(/revoked/);
  });
});
