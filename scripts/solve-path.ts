/**
 * How many files a newcomer opens to follow `POST /v1/solve` on the graft path, from the edge
 * route to the block store (issue 17), read from the real source:
 *
 * - **call chain**: the stops a graft request passes, each named by the function or class that
 *   runs there (the file is found by where that name is declared), in order. Each stop must be
 *   joined to its caller (the stop before it, unless named) in the import graph: by an import in
 *   either direction, through the interface the caller is handed (the caller reaches the
 *   interface's file by imports and the callee's file imports it: the pool reaches the solve
 *   service as `deps.gpu`, declared in edge/http.ts), or by the one signed HTTP hop to the GPU node (the
 *   route's path is in both files). Counted: the distinct files of the stops.
 * - **not counted**: what the chain files import besides each other (the signing transport, the
 *   node directory, the admission queue, schemas, errors, types): the call can be followed without
 *   opening them; their number is printed.
 * - **static import closure**: every project file reachable by imports (type imports included)
 *   from the chain's files (the pool is handed to the service, not imported, and the HTTP hop is
 *   not an import, so the closure of the edge route alone misses both).
 *
 *   node --import tsx scripts/solve-path.ts [--json]
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";

const root = resolve(import.meta.dirname, "..");
const PRODUCTION = ["edge", "gpu-node", "shared"];

interface Stop {
  /** A function, class or const declared there. */
  name: string;
  /** The folder it is declared under. */
  under: string;
  what: string;
  /** The stop that calls it (default: the one before). */
  from?: string;
  /** The interface file through which the caller holds it. */
  via?: string;
  hop?: "http";
}

/** The graft path's stops. */
const STOPS: Stop[] = [
  { name: "solveRoutes", under: "edge/routes", what: "the edge route" },
  { name: "solve", under: "edge/services", what: "the solve service" },
  { name: "routeProblem", under: "edge/routing", what: "the routing decision" },
  { name: "GpuPool", under: "edge/cluster", what: "the pool (deps.gpu.graft)", from: "solve" },
  { name: "graftRouted", under: "edge/cluster", what: "the pool's graft" },
  { name: "graftCandidates", under: "edge/cluster", what: "where the graft may go" },
  { name: "routeCandidates", under: "edge/cluster", what: "affinity: hot, then warm, then cold replicas" },
  { name: "createFailover", under: "edge/cluster", what: "one call with one retry" },
  { name: "createGpuClient", under: "shared", what: "the signed GPU client" },
  { name: "generationRoutes", under: "gpu-node/server", what: "the GPU node's route", hop: "http" },
  {
    name: "ModelWork",
    under: "gpu-node/server",
    what: "work admission (queue, deadline, SSE)",
    via: "gpu-node/server/context.ts",
  },
  {
    name: "BlockService",
    under: "gpu-node/blocks",
    what: "the block service's graft",
    from: "generationRoutes",
    via: "gpu-node/blocks/types.ts",
  },
  { name: "DiskCache", under: "gpu-node/blocks", what: "the block's local file (or the bucket's)" },
  { name: "BlockStore", under: "gpu-node/blocks", what: "the block store" },
];
/** The path the HTTP hop carries (the client sends it, the node's route answers it). */
const HTTP_PATH = "/v1/graft";

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) return sourceFiles(rel);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [rel] : [];
  });
}

const files = PRODUCTION.flatMap(sourceFiles);
const text = new Map(files.map((f) => [f, readFileSync(join(root, f), "utf8")]));

/** The project files a file imports (static, dynamic and re-exports; type imports included). */
function importsOf(file: string): string[] {
  const src = text.get(file) ?? "";
  const specs = [...src.matchAll(/(?:from|import)\s*\(?\s*"(\.[^"]+)"/g)].map((m) => m[1] as string);
  return [
    ...new Set(
      specs
        .map((s) => relative(root, resolve(root, dirname(file), s)).replace(/\.js$/, ".ts"))
        .filter((f) => text.has(f)),
    ),
  ];
}
const graph = new Map(files.map((f) => [f, importsOf(f)]));

function closure(start: string): Set<string> {
  const seen = new Set<string>([start]);
  const todo = [start];
  for (let f = todo.pop(); f !== undefined; f = todo.pop())
    for (const next of graph.get(f) ?? [])
      if (!seen.has(next)) {
        seen.add(next);
        todo.push(next);
      }
  return seen;
}

function declaringFile(name: string, under: string): string {
  const decl = new RegExp(`(?:function\\*?|class|const)\\s+${name}\\b`);
  const found = files.filter((f) => f.startsWith(`${under}/`) && decl.test(text.get(f) ?? ""));
  if (found.length !== 1)
    throw new Error(`${name} is declared in ${found.length} files under ${under}/: ${found.join(", ")}`);
  return found[0] as string;
}

const chain = STOPS.map((s) => ({ ...s, file: declaringFile(s.name, s.under) }));
const broken: string[] = [];
for (let i = 1; i < chain.length; i++) {
  const b = chain[i] as (typeof chain)[number];
  const a = (b.from ? chain.find((s) => s.name === b.from) : chain[i - 1]) as (typeof chain)[number];
  if (a.file === b.file) continue;
  if (b.via) {
    if (!closure(a.file).has(b.via) || !graph.get(b.file)?.includes(b.via))
      broken.push(`${a.file} -(${b.via})-> ${b.file}`);
    continue;
  }
  if (b.hop === "http") {
    const literal = `"${HTTP_PATH}"`;
    const clientSends =
      (text.get(a.file) ?? "").includes("gpuPaths.graft") || text.get(a.file)?.includes(literal);
    if (!clientSends || !text.get(b.file)?.includes(literal))
      broken.push(`${a.file} -HTTP ${HTTP_PATH}-> ${b.file}`);
    continue;
  }
  const joined = graph.get(a.file)?.includes(b.file) || graph.get(b.file)?.includes(a.file);
  if (!joined) broken.push(`${a.file} -> ${b.file}`);
}
const chainFiles = [...new Set(chain.map((s) => s.file))];
const sideFiles = [...new Set(chainFiles.flatMap((f) => graph.get(f) ?? []))]
  .filter((f) => !chainFiles.includes(f))
  .sort();
const staticClosure = new Set(chainFiles.flatMap((f) => [...closure(f)]));

const { values } = parseArgs({ options: { json: { type: "boolean", default: false } } });
const lines = (f: string) => (text.get(f) ?? "").split("\n").length;
if (values.json) {
  console.log(
    JSON.stringify({
      chain: chain.map(({ name, file, what }) => ({ name, file, what })),
      chainFiles: chainFiles.length,
      chainLines: chainFiles.reduce((n, f) => n + lines(f), 0),
      sideFiles,
      staticClosure: staticClosure.size,
      staticClosureLines: [...staticClosure].reduce((n, f) => n + lines(f), 0),
      broken,
    }),
  );
} else {
  console.log(`POST /v1/solve, graft path: call chain of ${chainFiles.length} files`);
  let last = "";
  for (const s of chain) {
    const mark = s.file === last ? "   " : s.hop === "http" ? "=> " : "-> ";
    console.log(`  ${mark}${s.file.padEnd(36)} ${s.name.padEnd(16)} ${s.what}`);
    last = s.file;
  }
  console.log(`imported by the chain files besides each other (not counted): ${sideFiles.length} files`);
  console.log(`static import closure of the chain's files: ${staticClosure.size} files`);
  for (const b of broken) console.log(`NOT JOINED: ${b}`);
}
if (broken.length > 0) process.exitCode = 1;
