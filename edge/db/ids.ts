/** Identifier generation for library rows (runtime-neutral: Web Crypto only). */
import { toHex } from "../../shared/hash.js";

let lastMs = 0;
let sequence = 0;

/**
 * A new id `<prefix>_<time><seq><random>`: 9 base-36 digits of milliseconds, a 4-digit base-36
 * sequence within that millisecond, then 12 random hex digits. Ids from one process sort in
 * creation order, so cursor pagination and the FIFO queue order by id alone.
 */
export function newId(prefix: string): string {
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    sequence = 0;
  } else {
    // same millisecond, or the clock stepped back: stay on the last time and count up
    sequence++;
  }
  const random = toHex(crypto.getRandomValues(new Uint8Array(6)));
  return `${prefix}_${lastMs.toString(36).padStart(9, "0")}${sequence.toString(36).padStart(4, "0")}${random}`;
}

/** Whether `value` has the shape `newId(prefix)` produces (used to reject forged cursors early). */
export function isId(prefix: string, value: string): boolean {
  return new RegExp(`^${prefix}_[0-9a-z]{13}[0-9a-f]{12}$`).test(value);
}
