#!/usr/bin/env bash
# Packs s3rver (a devDependency, so absent from the staged production app) with its production
# dependency tree into DIR/node_modules, for `kvgraft bench bucket --s3rver-dir DIR` on a machine
# without npm or network (the GPU machine): carry DIR there, nothing else to install.
#   bash scripts/stage-s3rver.sh DIR
# The closure is resolved as Node resolves it (a dependency from the nearest node_modules up from
# the package that needs it), from this checkout's node_modules; nested copies keep their place.
set -euo pipefail
dest=${1:?usage: stage-s3rver.sh DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
modules=$(realpath "$root/node_modules")
[[ -f $modules/s3rver/package.json ]] || { echo "stage-s3rver: no s3rver in $modules (npm ci first)" >&2; exit 1; }
rm -rf "$dest/node_modules"
mkdir -p "$dest/node_modules"
node - "$modules" "$dest/node_modules" <<'EOF'
const { cpSync, existsSync, readFileSync } = require("node:fs");
const { dirname, join, relative, sep } = require("node:path");
const [modules, out] = process.argv.slice(2);
const seen = new Set();
/** The folder Node would load `name` from when required by the package in `from`. */
function resolve(name, from) {
  for (let dir = from; dir.startsWith(modules); dir = dirname(dir)) {
    const candidate = join(dir, dir === modules ? "" : "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === modules) break;
  }
  throw new Error(`stage-s3rver: ${name} (needed by ${from}) not found`);
}
function add(dir) {
  if (seen.has(dir)) return;
  seen.add(dir);
  // The package without its own node_modules: nested dependencies are copied only if needed.
  cpSync(dir, join(out, relative(modules, dir)), {
    recursive: true,
    filter: (src) => !relative(dir, src).split(sep).includes("node_modules"),
  });
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  for (const name of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) {
    try {
      add(resolve(name, dir));
    } catch (err) {
      if (!(name in (pkg.optionalDependencies ?? {}))) throw err;
    }
  }
}
add(join(modules, "s3rver"));
console.error(`stage-s3rver: ${seen.size} packages`);
EOF
du -sh "$dest" >&2
