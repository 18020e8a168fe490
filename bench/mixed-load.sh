#!/usr/bin/env bash
# Reads during a lead flood: what a commit's fsync does to the other requests.
#
#   bash bench/mixed-load.sh [bundle] [fsync delay µs]
#     bundle           default dist/server.bundle.js (npm run build:server); give another build's
#                      bundle to compare designs on the same machine
#     fsync delay µs   default 0; > 0 preloads bench/fsync-delay.c (built here with gcc) to make
#                      every fsync that much slower, as on a slower disk
#
# Starts the API on a fresh data folder (SQLite, rate limits out of the way), then with wrk:
# getProjects alone (-c4, 5 s); then getProjects (-c4, 6 s) while 32 connections submit unique
# leads (9 s). Prints requests/s and the p50/p99 latencies of each.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-dist/server.bundle.js}
delay=${2:-0}
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }
[ -f "$bundle" ] || { echo "no $bundle: npm run build:server" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
preload=()
if [ "$delay" -gt 0 ]; then
  gcc -shared -fPIC -O2 -o "$tmp/fsync-delay.so" bench/fsync-delay.c -ldl
  preload=(LD_PRELOAD="$tmp/fsync-delay.so" FSYNC_DELAY_US="$delay")
fi
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
secret=$(node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))")
env "${preload[@]}" NODE_ENV=production HOST=127.0.0.1 PORT="$port" DATA_DIR="$tmp/var" LOG_LEVEL=info METRICS_PORT=0 \
  RATE_LIMITS='getProjects=100000000, submitLead=100000000, getLeads=100000000, issueToken=100000000' \
  BOOTSTRAP_CLIENT_ID=bench-client BOOTSTRAP_CLIENT_SECRET="$secret" node "$bundle" >"$tmp/api.log" 2>&1 &
pid=$!
until curl -s -o /dev/null "http://127.0.0.1:$port/healthz"; do
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/api.log"; exit 1; }
  sleep 0.05
done
token=$(curl -s -u "bench-client:$secret" -d grant_type=client_credentials -d 'scope=read:projects write:leads' \
  "http://127.0.0.1:$port/api/token" | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.parse(s).access_token))")
export LUA_PATH='bench/wrk/?.lua;;' BENCH_AUTHORIZATION="Bearer $token"
projects="http://127.0.0.1:$port/project_metadata.json"
leads="http://127.0.0.1:$port/scripts/enquiry_backend.php"
summary() { grep -E 'Requests/sec|^ +(50|99)%' | tr -s ' ' | paste -sd ' ' -; }

echo "bundle $bundle, fsync +${delay} µs"
BENCH_LEAD_TAG="warm$RANDOM" wrk -t1 -c8 -d2s -s bench/wrk/submit-lead.lua "$leads" >/dev/null
wrk -t1 -c4 -d2s -s bench/wrk/get.lua "$projects" >/dev/null
echo "getProjects alone:                 $(wrk -t1 -c4 -d5s --latency -s bench/wrk/get.lua "$projects" | summary)"
BENCH_LEAD_TAG="flood$RANDOM" wrk -t1 -c32 -d9s --latency -s bench/wrk/submit-lead.lua "$leads" >"$tmp/leads.txt" &
flood=$!
sleep 1.5
echo "getProjects during the lead flood: $(wrk -t1 -c4 -d6s --latency -s bench/wrk/get.lua "$projects" | summary)"
wait "$flood"
echo "the lead flood (32 connections):   $(summary <"$tmp/leads.txt")"
