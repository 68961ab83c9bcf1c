#!/usr/bin/env bash
# Benchmark: the cost of telemetry on a 2,000-unit review on the simulator (1,000 changed
# files x 2 skills, a healthy sim route played very fast): off, JSONL trace, OTLP export to
# a local collector stand-in. Prints wall time and CPU (user+sys) of each run.
#   usage: benches/telemetry.sh [FILES]
set -euo pipefail
files=${1:-1000}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="$root/target/release/warden"
work=$(mktemp -d)
collector_pid=
trap '[ -n "$collector_pid" ] && kill "$collector_pid" 2>/dev/null; rm -rf "$work"' EXIT
mkdir "$work/repo" && cd "$work/repo"
git init -q -b main
python3 - "$files" <<'PY'
import os, sys
os.makedirs("src", exist_ok=True)
for f in range(int(sys.argv[1])):
    with open(f"src/m{f}.py", "w") as fh:
        fh.writelines(f"value_{i} = compute({i}, {f})\n" for i in range(30))
PY
git add -A && git -c user.name=b -c user.email=b@example.com commit -qm base
python3 - "$files" <<'PY'
import sys
for f in range(int(sys.argv[1])):
    p = f"src/m{f}.py"
    lines = open(p).read().splitlines(True)
    lines[15] = f"changed_{f} = compute_changed({f})\n"
    open(p, "w").writelines(lines)
PY
cat >"$work/warden.toml" <<'TOML'
version = 1
[defaults.scan]
maxFiles = 100000
maxChangedLines = 10000000
[execution]
reviewBudget = "10m"
[[routes]]
name = "sim"
provider = "sim"
profile = "healthy"
timeScale = 100000
maxConcurrency = 64
TOML
# A collector stand-in: accepts OTLP/HTTP posts and answers 200.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 - "$port" <<'PY' &
import sys, http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
collector_pid=$!
sleep 0.5
run() { # label, env..., -- args...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$work/time" env "$@" "$bin" review -c "$work/warden.toml" --no-cache --json -q "${extra[@]}" >"$work/out.json" || true
  read -r wall user sys < <(tail -n 1 "$work/time")
  units=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["summary"]["units"], r["summary"]["reviewed"])' "$work/out.json")
  printf '%-22s %8.2f s %8.2f s   units/reviewed: %s\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" "$units"
}
printf '%-22s %10s %10s\n' telemetry wall cpu
extra=(); run "off" OTEL_SDK_DISABLED=true
extra=(--trace "$work/trace.jsonl"); run "jsonl trace" OTEL_SDK_DISABLED=true
echo "  trace: $(wc -l <"$work/trace.jsonl") lines, $(du -h "$work/trace.jsonl" | cut -f1)"
extra=(); run "otlp export" OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$port"
