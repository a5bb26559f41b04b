/**
 * The backends `KVGRAFT_SANDBOX` chooses from; `auto` is `wasm`, which needs nothing but npm's
 * packages, and how each isolates. A module of its own: the GPU node's config and `kvgraft start`
 * read it without loading the sandbox.
 */
export const SANDBOX_CHOICES = ["auto", "wasm", "bwrap"] as const;
export type SandboxChoice = (typeof SANDBOX_CHOICES)[number];

/** How each backend isolates, in a few words (logs, the `kvgraft start` banner, `kvgraft sandbox`). */
export const ISOLATION_TEXT: Record<"wasm" | "bwrap", string> = {
  wasm: "CPython on WebAssembly: a fresh interpreter per program, in-memory files only, no network, processes or host access",
  bwrap: "the host's CPython under bubblewrap: namespaces of its own, no network, no host files, a fresh uid",
};
