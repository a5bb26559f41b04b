/**
 * The GPU node's error helpers: shared/errors.ts's, with the code narrowed to the protocol's enum
 * (`GpuErrorCode`, shared/gpu-errors.ts), so every throw on the node names a declared code; a new
 * code is added to the enum first. The node throws through these only (test/gpu-error-codes.test.ts).
 */
import * as base from "../shared/errors.js";
import type { GpuErrorCode } from "../shared/protocol.js";

/** A helper of shared/errors.ts whose first parameter, the code, is a `GpuErrorCode`. */
type Coded<F> = F extends (code: string, ...rest: infer R) => infer T
  ? (code: GpuErrorCode, ...rest: R) => T
  : never;

export const badRequest: Coded<typeof base.badRequest> = base.badRequest;
export const unauthorized: Coded<typeof base.unauthorized> = base.unauthorized;
export const forbidden: Coded<typeof base.forbidden> = base.forbidden;
export const notFound: Coded<typeof base.notFound> = base.notFound;
export const conflict: Coded<typeof base.conflict> = base.conflict;
export const tooLarge: Coded<typeof base.tooLarge> = base.tooLarge;
export const unprocessable: Coded<typeof base.unprocessable> = base.unprocessable;
export const tooManyRequests: Coded<typeof base.tooManyRequests> = base.tooManyRequests;
export const notImplemented: Coded<typeof base.notImplemented> = base.notImplemented;
export const unavailable: Coded<typeof base.unavailable> = base.unavailable;

/** A DomainError of any other status (504 `deadline_exceeded`, 507 `disk_full`, ...). */
export function nodeError(
  status: base.ErrorStatus,
  code: GpuErrorCode,
  message: string,
  details?: Record<string, unknown>,
  retryAfterS?: number,
): base.DomainError {
  return new base.DomainError(status, code, message, details, retryAfterS);
}
