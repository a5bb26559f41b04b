/**
 * Upload grants on the import routes: a client holding an edge-issued grant
 * (`Authorization: KvgraftUpload <grant>` or the grant header) may upload the one block the grant
 * names, straight to the node, instead of going through the edge. The grant replaces the
 * signature on the import routes only, and an import session it started can only be continued
 * with it.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { BodyBound } from "../../shared/http/signature.js";
import { readBodyOnce } from "../../shared/http/signature.js";
import { UPLOAD_GRANT_HEADER, type UploadGrantClaims, verifyUploadGrant } from "../../shared/upload-grant.js";
import { forbidden, nodeError, unauthorized } from "../errors.js";
import type { GpuEnv } from "./context.js";
import type { ImportStart } from "./imports.js";

const IMPORT_ROUTE = /^\/v1\/imports(\/|$)/;
const GRANT_SCHEME = /^KvgraftUpload\s+(\S+)$/i;
/** Sessions remembered at most; the oldest is forgotten first (a session idles out anyway). */
const MAX_SESSIONS = 1000;

/** The upload grant a request carries, if any. */
function grantToken(c: Context): string | undefined {
  const auth = c.req.header("authorization")?.match(GRANT_SCHEME)?.[1];
  return auth ?? c.req.header(UPLOAD_GRANT_HEADER) ?? undefined;
}

export class UploadGrants {
  /** import id -> the SHA-256 of the block whose grant started it. */
  private readonly sessions = new Map<string, string>();

  /** `secrets`: the node's accepted secrets (the current one first). */
  constructor(private readonly secrets: readonly string[]) {}

  /**
   * Authenticates a request: with a grant, the grant (import routes only; its body read, bounded,
   * as the signature would); without one, `signature`.
   */
  middleware(signature: MiddlewareHandler, maxBody: BodyBound): MiddlewareHandler<GpuEnv> {
    return async (c, next) => {
      const token = grantToken(c);
      if (token === undefined) return signature(c, next);
      if (!IMPORT_ROUTE.test(c.req.path))
        throw forbidden("grant_scope", "an upload grant is only good for the import endpoints");
      let verdict = await verifyUploadGrant(this.secrets[0] ?? "", token);
      for (const secret of this.secrets.slice(1))
        if (!verdict.ok && verdict.code === "grant_invalid") verdict = await verifyUploadGrant(secret, token);
      if (!verdict.ok) throw unauthorized(verdict.code, "the upload grant is not valid");
      c.set("grant", verdict.claims);
      await readBodyOnce(c, typeof maxBody === "number" ? maxBody : maxBody(c));
      await next();
    };
  }

  /** A granted import must be for the granted block, at its size. */
  checkStart(grant: UploadGrantClaims | undefined, req: ImportStart): void {
    if (grant && (req.manifest.sha256 !== grant.sha256 || req.sizeBytes !== grant.sizeBytes))
      throw nodeError(403, "grant_mismatch", "the upload grant is for another block", {
        grantSha256: grant.sha256,
        grantSizeBytes: grant.sizeBytes,
      });
  }

  /** A granted bucket import must be the grant's own upload (its id) of the granted block, at its size. */
  checkBucketImport(
    grant: UploadGrantClaims | undefined,
    req: { uploadId: string; sha256: string; sizeBytes: number },
  ): void {
    if (
      grant &&
      (req.uploadId !== grant.jti || req.sha256 !== grant.sha256 || req.sizeBytes !== grant.sizeBytes)
    )
      throw nodeError(403, "grant_mismatch", "the upload grant is for another upload or block", {
        grantSha256: grant.sha256,
        grantSizeBytes: grant.sizeBytes,
      });
  }

  /** Remembers that `grant` started import `importId`. */
  started(grant: UploadGrantClaims | undefined, importId: string): void {
    if (!grant) return;
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
    this.sessions.set(importId, grant.sha256);
  }

  /** With a grant, an import session must be the one the grant started. */
  checkSession(grant: UploadGrantClaims | undefined, importId: string): void {
    if (grant && this.sessions.get(importId) !== grant.sha256)
      throw forbidden("grant_scope", "this import was not started with this upload grant");
  }

  /** The session ended (committed or aborted). */
  ended(importId: string): void {
    this.sessions.delete(importId);
  }
}
