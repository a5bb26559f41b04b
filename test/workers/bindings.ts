/**
 * What the workerd tests, their global setup (test/helpers/workers-setup.ts) and
 * vitest.workers.config.ts agree on: the Worker's test secrets, and what the setup provides.
 */

/** The GPU secret of the Worker's bindings and of the GPU nodes the setup starts. */
export const WORKERS_GPU_SECRET = "workers-test-secret-0123456789";

/** The Cloudflare Access service token the Worker sends to GPU nodes (KVGRAFT_ACCESS_CLIENT_*). */
export const WORKERS_ACCESS = {
  clientId: "workers-test-access-id.access",
  clientSecret: "workers-test-access-secret",
} as const;

/** Marks the tests' own calls to a GPU node, which the call recorder of the config skips. */
export const TEST_CALL_HEADER = "x-kvgraft-test-call";

/** The admin key the Worker installs (KVGRAFT_ADMIN_KEY). */
export const WORKERS_ADMIN_KEY = "kvg_workers0_0123456789abcdefghijABCDEFGHIJ0123456789";

declare module "vitest" {
  export interface ProvidedContext {
    /** The libSQL server the Worker's LIBSQL_URL names. */
    libsqlUrl: string;
    /** The GPU nodes, not yet registered: the tests send their heartbeats. */
    gpuNodes: { id: string; url: string }[];
    /** `POST <controlUrl>/kill/<node id>` SIGKILLs that node. */
    controlUrl: string;
  }
}
