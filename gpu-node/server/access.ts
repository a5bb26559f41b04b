/**
 * Cloudflare Access in front of the GPU node: when configured, every request but `/health` must
 * carry a valid Access JWT besides the edge's signature (shared/http/signature.ts). Both run
 * before any handler, so a refused request has no side effect.
 */
import type { MiddlewareHandler } from "hono";
import { Jwt } from "hono/utils/jwt";
import type { HonoJsonWebKey } from "hono/utils/jwt/jws";
import { z } from "zod";
import { DomainError } from "../../shared/errors.js";
import { unauthorized, unavailable } from "../errors.js";

/** Cloudflare Access settings: the application's audience tag and the team domain. */
export interface AccessConfig {
  /** The Access application's AUD tag. */
  audience: string;
  /** `https://<team>.cloudflareaccess.com`; the issuer of the tokens and the host of their keys. */
  teamDomain: string;
}

export const ACCESS_JWT_HEADER = "cf-access-jwt-assertion";

const jwksSchema = z.object({
  keys: z.array(z.looseObject({ kid: z.string(), kty: z.string() })),
});

/**
 * Keys of an Access team, fetched from `<teamDomain>/cdn-cgi/access/certs` and cached. A token
 * with an unknown key id triggers a refetch (Access rotates keys), at most once per `minRefetchMs`
 * so forged key ids cannot turn into a flood of fetches.
 */
export class AccessKeys {
  private keys: HonoJsonWebKey[] = [];
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private inflight: Promise<void> | undefined;

  constructor(
    readonly certsUrl: string,
    private readonly maxAgeMs = 10 * 60_000,
    private readonly minRefetchMs = 30_000,
  ) {}

  /** Keys that include `kid` when the team publishes it. */
  async forKid(kid: string | undefined): Promise<HonoJsonWebKey[]> {
    const age = Date.now() - this.fetchedAt;
    const unknown = !this.keys.some((k) => k.kid === kid);
    if (age > this.maxAgeMs || (unknown && age > this.minRefetchMs)) await this.refresh();
    return this.keys;
  }

  private refresh(): Promise<void> {
    this.inflight ??= (async () => {
      try {
        const res = await fetch(this.certsUrl, { signal: AbortSignal.timeout(5000) });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        this.keys = jwksSchema.parse(await res.json()).keys as HonoJsonWebKey[];
        this.fetchedAt = Date.now();
      } catch (err) {
        // Keep serving with the keys we have; only a node that never got any keys refuses.
        if (this.keys.length === 0)
          throw unavailable(
            "access_keys_unavailable",
            `cannot fetch Access keys: ${(err as Error).message}`,
            5,
          );
      } finally {
        this.inflight = undefined;
      }
    })();
    return this.inflight;
  }
}

/** Requires a Cloudflare Access JWT (RS256) for the configured audience and team. */
export function accessAuth(config: AccessConfig): MiddlewareHandler {
  const issuer = config.teamDomain.replace(/\/+$/, "");
  const keys = new AccessKeys(`${issuer}/cdn-cgi/access/certs`);
  return async (c, next) => {
    const token = c.req.header(ACCESS_JWT_HEADER);
    if (!token)
      throw unauthorized("access_token_missing", "Cloudflare Access token (Cf-Access-Jwt-Assertion) missing");
    let kid: string | undefined;
    try {
      kid = Jwt.decode(token).header.kid;
    } catch {
      throw unauthorized("access_token_invalid", "Cloudflare Access token is malformed");
    }
    const known = await keys.forKid(kid);
    try {
      const payload = await Jwt.verifyWithJwks(token, {
        keys: known,
        allowedAlgorithms: ["RS256"],
        verification: { aud: config.audience, iss: issuer },
      });
      if (typeof payload.exp !== "number") throw new Error("token has no expiry");
    } catch (err) {
      if (err instanceof DomainError) throw err;
      throw unauthorized("access_token_invalid", `Cloudflare Access token rejected: ${(err as Error).name}`);
    }
    await next();
  };
}
