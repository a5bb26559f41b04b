/**
 * The README's configuration tables, generated from the zod schemas that validate the
 * environment (each variable: name, default, meaning from its `.describe()`):
 * `npm run docs:config` rewrites the README section, test/config-docs.test.ts fails when it differs.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { z } from "zod";
import { edgeEnvSchema } from "../edge/config.js";
import { gpuEnvSchema } from "../gpu-node/config.js";
import { toolEnvSchema } from "./config.js";
import { packageRoot } from "./package-root.js";

/** Where the generated tables sit in the README. */
export const BEGIN = "<!-- config:begin (generated from the schemas by npm run docs:config; do not edit) -->";
export const END = "<!-- config:end -->";

const SECTIONS: { title: string; schema: z.ZodObject }[] = [
  { title: "Edge (`kvgraft serve edge`, `npm start`, the Worker: edge/config.ts)", schema: edgeEnvSchema },
  { title: "GPU node (`kvgraft serve gpu`, `npm start`: gpu-node/config.ts)", schema: gpuEnvSchema },
  { title: "Tools (`kvgraft start`, `bench edge`: cli/config.ts)", schema: toolEnvSchema },
];

type Def = { type: string; defaultValue?: unknown; innerType?: z.ZodType; in?: z.ZodType };

/** The default a field declares: a value, `null` for an optional one without, `undefined` when required. */
function declaredDefault(field: z.ZodType): { value: unknown } | null | undefined {
  const def = field._zod.def as Def;
  if (def.type === "default") return { value: def.defaultValue };
  if (def.type === "optional") return null;
  if (def.type === "pipe" && def.in) return declaredDefault(def.in);
  return undefined;
}

function defaultCell(field: z.ZodType): string {
  const d = declaredDefault(field);
  if (d === undefined) return "required";
  if (d === null) return "—";
  return typeof d.value === "string" ? `\`${d.value}\`` : String(d.value);
}

/** Every variable of the schemas, by section: `[section, name, default, meaning]`. */
export function configRows(): [string, string, string, string][] {
  const rows: [string, string, string, string][] = [];
  for (const { title, schema } of SECTIONS)
    for (const [name, field] of Object.entries(schema.shape)) {
      const meaning = (field as z.ZodType).description;
      if (!meaning)
        throw new Error(`${name} in "${title}" has no .describe(): every variable needs its meaning`);
      rows.push([title, name, defaultCell(field as z.ZodType), meaning]);
    }
  return rows;
}

/** The generated part of the README: one table per section. */
export function configTables(): string {
  const out: string[] = [];
  for (const { title } of SECTIONS) {
    out.push(`**${title}**`, "", "| variable | default | meaning |", "|---|---|---|");
    for (const [section, name, dflt, meaning] of configRows())
      if (section === title) out.push(`| \`${name}\` | ${dflt} | ${meaning.replaceAll("|", "\\|")} |`);
    out.push("");
  }
  return out.join("\n").trimEnd();
}

export const README = join(packageRoot(), "README.md");

/** The README's generated section (between the markers), or null when the markers are missing. */
export function readmeSection(readme: string): string | null {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (begin < 0 || end < begin) return null;
  return readme.slice(begin + BEGIN.length, end).trim();
}

/** `readme` with its generated section replaced by `tables`. */
export function withTables(readme: string, tables: string): string {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`README.md lacks the markers ${BEGIN} ... ${END}`);
  return `${readme.slice(0, begin + BEGIN.length)}\n\n${tables}\n\n${readme.slice(end)}`;
}

// `npm run docs:config`: rewrite the README's tables.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const readme = readFileSync(README, "utf8");
  const next = withTables(readme, configTables());
  if (next !== readme) writeFileSync(README, next);
  process.stdout.write(
    `${next === readme ? "unchanged" : "updated"}: ${README} (${configRows().length} variables)\n`,
  );
}
