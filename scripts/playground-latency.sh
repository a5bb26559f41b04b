#!/usr/bin/env bash
# Playground latency with the flywheel busy (docs/model.md): starts `kvgraft start` in CHECKOUT on
# a fresh data directory, queues six problems of held-out families for the flywheel, then times
# three trained-family problems twice each through POST /v1/solve (what the playground sends) with
# curl, and prints the flywheel's progress then and 60 s later.
# usage: scripts/playground-latency.sh [CHECKOUT] [LABEL]   (default: this checkout, "run")
set -u
dir=$(cd "${1:-$(dirname "$0")/..}" && pwd)
label=${2:-run}
key="kvg_latency1_0123456789abcdef0123456789abcdef"
data=$(mktemp -d)
log="$data/start.log"
cd "$dir"
KVGRAFT_ADMIN_KEY=$key KVGRAFT_DATA_DIR=$data node --import tsx cli/main.ts start >"$log" 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 1 180); do grep -q "curl" "$log" 2>/dev/null && break; sleep 1; done
sleep 3
H=(-H "authorization: Bearer $key" -H "content-type: application/json")
for p in "Luis scored 69, 38, 12 and 62 on four tests. What is the average score?" \
  "A jacket costs \$263. The shop takes 70% off. What is the sale price in dollars?" \
  "What is the least common multiple of 12 and 34?" \
  "How many ways can 4 of 9 runners finish first, second, third and fourth?" \
  "A car travels at 72 km/h. What is its speed in metres per second?" \
  "Sam has 5 red and 9 blue marbles. He draws one, puts it back, and draws again. What is the probability both are red?"; do
  curl -s "${H[@]}" -X POST localhost:8787/admin/flywheel -d "{\"problem\": \"$p\"}" >/dev/null
done
sleep 8
progress() {
  curl -s "${H[@]}" localhost:8787/admin/flywheel |
    node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>console.log(JSON.stringify(JSON.parse(s).progress)))'
}
echo "$label $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
for round in 1 2; do
  for p in "25 teams play in a league where every team plays every other team exactly once. How many games are played?" \
    "How many square tiles, each one metre on a side, are needed to cover a rectangular floor 17 m long and 3 m wide?" \
    "A train covers 210 km at a steady 60 km/h. How many minutes does the trip take?"; do
    out=$(curl -s -w ' %{time_total}' "${H[@]}" -X POST localhost:8787/v1/solve -d "{\"problem\": \"$p\"}")
    answer=$(node -e 'const d=JSON.parse(process.argv[1]);console.log(d.answer,d.source,d.confidence)' "${out% *}")
    echo "$label round $round: ${out##* } s $answer"
  done
done
echo "$label flywheel now: $(progress)"
echo "$label end load $(cut -d' ' -f1 /proc/loadavg)"
sleep 60
echo "$label flywheel 60 s later: $(progress)"
