/**
 * The backends `KVGRAFT_SANDBOX` chooses from; `auto` is `wasm`, which needs nothing but npm's
 * packages. A module of its own: the GPU node's config reads it without loading the sandbox.
 */
export const SANDBOX_CHOICES = ["auto", "wasm", "bwrap"] as const;
export type SandboxChoice = (typeof SANDBOX_CHOICES)[number];
