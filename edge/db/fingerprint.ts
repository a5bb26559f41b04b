/** Fingerprints as stored in columns, so blocks and nodes compare with plain string equality. */

/** A model or engine fingerprint: already a string, or a JSON object of its parts. */
export type FingerprintValue = string | { readonly [key: string]: unknown };

/** The column form of a fingerprint: strings as they are, objects as JSON with sorted keys. */
export function fingerprintKey(value: FingerprintValue): string {
  return typeof value === "string" ? value : canonicalJson(value);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
