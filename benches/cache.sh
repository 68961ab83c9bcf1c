#!/usr/bin/env bash
# Benchmark: the result cache on a pull request's second push. 30 changed files x 2 skills
# = 60 units, reviewed on the simulator (healthy profile, played 60x faster, 4 slots per
# route). Then a push that changes 1 of the 30 files: the cached re-review against a cold
# review of the same push. Prints units, requests (attempts sent), units from cache (and of
# them from the fleet's shared level) and wall time of each run. When redis-server is
# installed, every run shares answers through a local one ([fleet] cache = true), and a last
# row reviews push 2 on a "second machine": an empty local cache with the shared level warm.
#   usage: benches/cache.sh [FILES]
set -euo pipefail
files=${1:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="$root/target/release/warden"
work=$(mktemp -d)
redis_pid=
trap '[ -n "$redis_pid" ] && kill "$redis_pid"; rm -rf "$work"' EXIT
cat >"$work/warden.toml" <<'TOML'
version = 1
[[routes]]
name = "primary"
provider = "sim"
profile = "healthy"
timeScale = 60
seed = 7
maxConcurrency = 4
[[routes]]
name = "fallback"
provider = "sim"
profile = "healthy"
timeScale = 60
seed = 8
maxConcurrency = 4
TOML
if command -v redis-server >/dev/null; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    --daemonize no --loglevel warning >/dev/null &
  redis_pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  printf '[fleet]\nredis = "redis://127.0.0.1:%s"\nnamespace = "bench"\ncache = true\n' "$port" >>"$work/warden.toml"
fi
mkdir "$work/repo" && cd "$work/repo"
git init -q -b main
git() { command git -c user.name=b -c user.email=b@example.com "$@"; }
python3 - "$files" <<'PY'
import os, sys
os.makedirs("src", exist_ok=True)
for f in range(int(sys.argv[1])):
    with open(f"src/m{f}.py", "w") as fh:
        fh.writelines(f"value_{i} = compute({i}, {f})\n" for i in range(80))
PY
git add -A && git commit -qm base
git checkout -q -b feature
# First push: one change in the middle of every file.
python3 - "$files" <<'PY'
import sys
for f in range(int(sys.argv[1])):
    p = f"src/m{f}.py"
    lines = open(p).read().splitlines(True)
    lines[40] = f"query = \"SELECT * FROM t WHERE id = \" + user_{f}\n"
    open(p, "w").writelines(lines)
PY
git add -A && git commit -qm "first push"
run() { # label, then warden flags
  local label=$1; shift
  /usr/bin/time -f "%e" -o "$work/time" "$bin" review main..feature -c "$work/warden.toml" \
    --json -q "$@" >"$work/out.json" || true
  python3 - "$label" "$work/out.json" "$(tail -n 1 "$work/time")" <<'PY'
import json, sys
label, path, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = json.load(open(path))
s = r["summary"]
print(f'{label:<40} {s["units"]:>6} {r["counters"]["attempts"]:>9} {s["fromCache"]:>11} {s.get("fromSharedCache", 0):>7} {s["reviewed"]:>9} {wall:>8.2f}')
PY
}
printf '%-40s %6s %9s %11s %7s %9s %8s\n' run units requests from_cache shared reviewed wall_s
run "push 1, cold (empty cache)" --cache-dir "$work/cache"
run "push 1 again (identical rerun)" --cache-dir "$work/cache"
# Second push: one of the files changes again, in its reviewed chunk.
python3 - <<'PY'
p = "src/m0.py"
lines = open(p).read().splitlines(True)
lines[41] = "password = \"hunter2\"\n"
open(p, "w").writelines(lines)
PY
git add -A && git commit -qm "second push"
run "push 2, cold (--no-cache)" --no-cache
run "push 2, with push 1's cache" --cache-dir "$work/cache"
if [ -n "$redis_pid" ]; then
  run "push 2, second machine (shared warm)" --cache-dir "$work/cache-second-machine"
  run "push 2, second machine again (local)" --cache-dir "$work/cache-second-machine"
fi
"$bin" cache stats --cache-dir "$work/cache" | sed 's/^/  /'
