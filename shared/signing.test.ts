import { describe, expect, it } from "vitest";
import { sha256Hex } from "./hash.js";
import { NonceCache, SIGNATURE_HEADERS, signRequest, verifySignature } from "./signing.js";

const secret = "test-secret-0123456789abcdef";
const now = 1_800_000_000_000;
const path = "/v1/graft?block=abc&slot=2";
const body = JSON.stringify({ tokens: [1, 2, 3] });

async function signed(overrides: Partial<Parameters<typeof signRequest>[0]> = {}) {
  return signRequest({ secret, method: "POST", path, body, now, ...overrides });
}

async function verify(
  headers: Record<string, string>,
  overrides: Partial<Parameters<typeof verifySignature>[0]> = {},
) {
  return verifySignature({
    secret,
    method: "POST",
    path,
    headers: (name) => headers[name],
    bodySha256: await sha256Hex(body),
    now,
    nonces: new NonceCache(),
    ...overrides,
  });
}

const codeOf = (r: Awaited<ReturnType<typeof verifySignature>>) => (r.ok ? "ok" : r.code);

describe("signRequest", () => {
  it("returns the four headers in their documented formats", async () => {
    const h = await signed();
    expect(h[SIGNATURE_HEADERS.timestamp]).toBe("1800000000");
    expect(h[SIGNATURE_HEADERS.nonce]).toMatch(/^[0-9a-f]{32}$/);
    expect(h[SIGNATURE_HEADERS.contentSha256]).toBe(await sha256Hex(body));
    expect(h[SIGNATURE_HEADERS.signature]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("signs the documented canonical string", async () => {
    const nonce = "0123456789abcdef0123456789abcdef";
    const h = await signed({ method: "post", nonce });
    const key = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const message = `POST\n${path}\n1800000000\n${nonce}\n${await sha256Hex(body)}`;
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
    expect(h[SIGNATURE_HEADERS.signature]).toBe(
      [...mac].map((b) => b.toString(16).padStart(2, "0")).join(""),
    );
  });

  it("uses a fresh random nonce per request", async () => {
    const a = await signed();
    const b = await signed();
    expect(a[SIGNATURE_HEADERS.nonce]).not.toBe(b[SIGNATURE_HEADERS.nonce]);
  });

  it("hashes a byte body like the same text", async () => {
    const a = await signed({ nonce: "a".repeat(32) });
    const b = await signed({ nonce: "a".repeat(32), body: new TextEncoder().encode(body) });
    expect(b).toEqual(a);
  });

  it("rejects an empty secret and a malformed nonce", async () => {
    await expect(signed({ secret: "" })).rejects.toThrow(/secret/);
    await expect(signed({ nonce: "xyz" })).rejects.toThrow(/nonce/);
  });
});

describe("verifySignature", () => {
  it("accepts a round trip, with a string or a byte secret", async () => {
    expect(await verify(await signed())).toEqual({ ok: true });
    const bytes = new TextEncoder().encode(secret);
    expect(await verify(await signed({ secret: bytes }), { secret: bytes })).toEqual({ ok: true });
  });

  it("accepts an empty body and a GET", async () => {
    const h = await signed({ method: "GET", body: undefined });
    expect(await verify(h, { method: "GET", bodySha256: await sha256Hex("") })).toEqual({ ok: true });
  });

  it("reports each missing header as signature_missing", async () => {
    const h = await signed();
    for (const name of Object.values(SIGNATURE_HEADERS)) {
      const { [name]: _dropped, ...rest } = h;
      const r = await verify(rest);
      expect(codeOf(r)).toBe("signature_missing");
    }
    expect(codeOf(await verify({}))).toBe("signature_missing");
  });

  it("reports malformed headers as signature_malformed", async () => {
    const h = await signed();
    const bad: Record<string, string> = {
      [SIGNATURE_HEADERS.timestamp]: "soon",
      [SIGNATURE_HEADERS.nonce]: "NOT-HEX",
      [SIGNATURE_HEADERS.contentSha256]: "abc",
      [SIGNATURE_HEADERS.signature]: `${h[SIGNATURE_HEADERS.signature]}00`,
    };
    for (const [name, value] of Object.entries(bad)) {
      const r = await verify({ ...h, [name]: value });
      expect(codeOf(r)).toBe("signature_malformed");
    }
  });

  it("rejects timestamps beyond the skew on either side, and accepts them at the limit", async () => {
    const h = await signed();
    expect(codeOf(await verify(h, { now: now + 301_000 }))).toBe("signature_skewed");
    expect(codeOf(await verify(h, { now: now - 301_000 }))).toBe("signature_skewed");
    expect(codeOf(await verify(h, { now: now + 300_000 }))).toBe("ok");
    expect(codeOf(await verify(h, { now: now - 300_000 }))).toBe("ok");
    expect(codeOf(await verify(h, { now: now + 61_000, maxSkewS: 60 }))).toBe("signature_skewed");
  });

  it("rejects a replayed nonce", async () => {
    const nonces = new NonceCache();
    const h = await signed();
    expect(codeOf(await verify(h, { nonces }))).toBe("ok");
    const again = await verify(h, { nonces, now: now + 5_000 });
    expect(again).toMatchObject({ ok: false, code: "signature_replayed" });
  });

  it("rejects a tampered method, path, query, timestamp or nonce", async () => {
    const h = await signed();
    expect(codeOf(await verify(h, { method: "PUT" }))).toBe("signature_invalid");
    expect(codeOf(await verify(h, { path: "/v1/graft?block=abc&slot=3" }))).toBe("signature_invalid");
    expect(codeOf(await verify(h, { path: "/v1/deposit?block=abc&slot=2" }))).toBe("signature_invalid");
    const ts = String(Number(h[SIGNATURE_HEADERS.timestamp]) + 1);
    expect(codeOf(await verify({ ...h, [SIGNATURE_HEADERS.timestamp]: ts }))).toBe("signature_invalid");
    expect(codeOf(await verify({ ...h, [SIGNATURE_HEADERS.nonce]: "f".repeat(32) }))).toBe(
      "signature_invalid",
    );
  });

  it("rejects a signature made with another secret", async () => {
    expect(codeOf(await verify(await signed({ secret: "other-secret" })))).toBe("signature_invalid");
  });

  it("rejects a body that differs from the signed hash, and a re-hashed header", async () => {
    const h = await signed();
    const tampered = await sha256Hex(`${body} `);
    expect(codeOf(await verify(h, { bodySha256: tampered }))).toBe("body_hash_mismatch");
    const rehashed = { ...h, [SIGNATURE_HEADERS.contentSha256]: tampered };
    expect(codeOf(await verify(rehashed, { bodySha256: tampered }))).toBe("signature_invalid");
  });

  it("records the nonce only for a request that passes", async () => {
    const nonces = new NonceCache();
    const h = await signed();
    expect(codeOf(await verify(h, { nonces, method: "PUT" }))).toBe("signature_invalid");
    expect(codeOf(await verify(h, { nonces, bodySha256: await sha256Hex("x") }))).toBe("body_hash_mismatch");
    expect(nonces.size).toBe(0);
    expect(codeOf(await verify(h, { nonces }))).toBe("ok");
    expect(nonces.size).toBe(1);
  });
});

describe("NonceCache", () => {
  it("forgets a nonce after its TTL", () => {
    const cache = new NonceCache({ ttlS: 10 });
    cache.add("a", 0);
    expect(cache.has("a", 9_999)).toBe(true);
    expect(cache.has("a", 10_000)).toBe(false);
    expect(cache.has("b", 0)).toBe(false);
  });

  it("defaults its TTL to twice the default skew", () => {
    expect(new NonceCache().ttlMs).toBe(600_000);
  });

  it("evicts expired entries before live ones", () => {
    const cache = new NonceCache({ maxEntries: 3, ttlS: 10 });
    cache.add("old1", 0);
    cache.add("old2", 1_000);
    cache.add("live", 9_000);
    cache.add("new", 12_000);
    expect(cache.size).toBe(2);
    expect(cache.has("live", 12_000)).toBe(true);
    expect(cache.has("new", 12_000)).toBe(true);
  });

  it("evicts the oldest live entry when full", () => {
    const cache = new NonceCache({ maxEntries: 2, ttlS: 100 });
    cache.add("a", 0);
    cache.add("b", 1);
    cache.add("c", 2);
    expect(cache.size).toBe(2);
    expect(cache.has("a", 3)).toBe(false);
    expect(cache.has("b", 3)).toBe(true);
    expect(cache.has("c", 3)).toBe(true);
  });

  it("rejects a non-positive size or TTL", () => {
    expect(() => new NonceCache({ maxEntries: 0 })).toThrow(RangeError);
    expect(() => new NonceCache({ ttlS: 0 })).toThrow(RangeError);
  });
});
