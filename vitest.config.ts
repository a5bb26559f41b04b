import { defineConfig } from "vitest/config";

// Tests run real llama.cpp inference on 2 CPU cores: one file at a time keeps each test's
// thread count honest, and generous timeouts cover model loads on slow CI machines.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "shared/**/*.test.ts", "edge/**/*.test.ts", "gpu-node/**/*.test.ts"],
    exclude: ["test/workers/**", "node_modules/**", "dist/**"],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: "forks",
  },
});
