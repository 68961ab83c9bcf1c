#!/usr/bin/env bash
# 20 units against a real llama.cpp server (SmolLM2-135M, see docs/providers.md "Local
# models") at 1 and 2 slots, through the `llamacpp` preset (slots and window from /props,
# the bounded findings schema), `--no-tools`. Prints, per slot count: wall time, units
# reviewed, attempts, output tokens, and tokens per second as warden measured them
# (output tokens over the review's wall time; and per request, over the time from first
# token to the end). Needs WARDEN_LLAMA_SERVER_BIN and WARDEN_LLAMA_MODEL (scripts/test
# sets them up: WARDEN_PEERS_ONLY=1 scripts/test) and a built warden (cargo build).
#   bash benches/local_model.sh [UNITS]
set -euo pipefail
cd "$(dirname "$0")/.."
units="${1:-20}"
warden="${WARDEN_BIN:-$PWD/target/debug/warden}"
: "${WARDEN_LLAMA_SERVER_BIN:?run WARDEN_PEERS_ONLY=1 scripts/test and export what it prints}"
: "${WARDEN_LLAMA_MODEL:?run WARDEN_PEERS_ONLY=1 scripts/test and export what it prints}"
work=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# A repository with $units changed files: one hunk (one unit) each.
repo="$work/repo"
mkdir -p "$repo/src"
git -C "$repo" init -q
for i in $(seq 0 $((units - 1))); do
  for n in $(seq 1 10); do echo "    let v$n = compute_$i($n);"; done >"$repo/src/f$i.rs"
done
git -C "$repo" add -A
git -C "$repo" -c user.email=b@x -c user.name=b commit -qm base
for i in $(seq 0 $((units - 1))); do
  printf '    let total = v1 + v2 / (v3 - %d);\n    if total > 0 { return; }\n' "$i" >>"$repo/src/f$i.rs"
done

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "| slots | wall | reviewed | attempts | output tokens | tok/s (throughput) | tok/s per request (median) |"
echo "|---|---|---|---|---|---|---|"
for slots in 1 2; do
  "$WARDEN_LLAMA_SERVER_BIN" -m "$WARDEN_LLAMA_MODEL" --host 127.0.0.1 --port "$port" \
    -c $((4096 * slots)) --parallel "$slots" --threads 2 --no-warmup >"$work/server.log" 2>&1 &
  server_pid=$!
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.2; done
  cat >"$work/warden.toml" <<TOML
version = 1
[execution]
reviewBudget = "15m"
hunkBudget = "5m"
[[routes]]
name = "local"
provider = "llamacpp"
model = "smollm2"
baseUrl = "http://127.0.0.1:$port/v1"
TOML
  start=$(date +%s.%N)
  (cd "$repo" && WARDEN_CACHE_DIR="$work/cache-$slots" "$warden" review --skill code-review \
    -c "$work/warden.toml" --no-tools --json --fail-on off -q >"$work/report-$slots.json") || true
  end=$(date +%s.%N)
  python3 - "$work/report-$slots.json" "$slots" "$start" "$end" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1])); slots = sys.argv[2]
wall = float(sys.argv[4]) - float(sys.argv[3])
atts = [a for u in r["units"] for a in u["attempts"]]
out = sum(a.get("outputTokens") or 0 for a in atts)
rates = [a["outputTokens"] / ((a["durationMs"] - a["ttftMs"]) / 1000)
         for a in atts if a.get("outputTokens") and a.get("ttftMs") is not None
         and a["durationMs"] > a["ttftMs"]]
rate = statistics.median(rates) if rates else 0.0
print(f"| {slots} | {wall:.1f} s | {r['summary']['reviewed']}/{r['summary']['units']} | {len(atts)} "
      f"| {out} | {out / wall:.1f} | {rate:.1f} |")
PY
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
done
