/**
 * The README's configuration tables are what the schemas generate (`npm run docs:config`), and
 * the schemas hold what the tables rely on: every variable described, a variable read by both
 * services declared with the same default.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  BEGIN,
  configRows,
  configTables,
  END,
  README,
  readmeSection,
  withTables,
} from "../cli/config-docs.js";
import { edgeEnvSchema } from "../edge/config.js";
import { gpuEnvSchema } from "../gpu-node/config.js";

describe("the README's configuration tables", () => {
  it("are what the schemas generate (run npm run docs:config after changing a schema)", () => {
    expect(readmeSection(readFileSync(README, "utf8"))).toBe(configTables());
  });

  it("list every variable of both services", () => {
    const services = new Set([...Object.keys(edgeEnvSchema.shape), ...Object.keys(gpuEnvSchema.shape)]);
    expect(services.size).toBe(50);
    const listed = new Set(configRows().map(([, name]) => name));
    expect([...services].filter((name) => !listed.has(name))).toEqual([]);
  });

  it("give a variable both services read the same default in both", () => {
    const rows = configRows();
    const byName = new Map<string, Set<string>>();
    for (const [, name, dflt] of rows) byName.set(name, (byName.get(name) ?? new Set()).add(dflt));
    expect([...byName].filter(([, defaults]) => defaults.size > 1).map(([name]) => name)).toEqual([]);
  });

  it("fail on a README that misses a variable or has a stale default", () => {
    const tables = configTables();
    const readme = withTables(`intro\n${BEGIN}\n${END}\nrest\n`, tables);
    expect(readmeSection(readme)).toBe(tables);
    const missing = readme.replace(/^\| `KVGRAFT_REPLICAS` .*\n/m, "");
    expect(readmeSection(missing)).not.toBe(tables);
    const stale = readme.replace("| `KVGRAFT_REPLICAS` | 2 |", "| `KVGRAFT_REPLICAS` | 3 |");
    expect(stale).not.toBe(readme);
    expect(readmeSection(stale)).not.toBe(tables);
    expect(readmeSection("no markers")).toBeNull();
  });
});
