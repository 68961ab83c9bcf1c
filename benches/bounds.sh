#!/usr/bin/env bash
# Benchmark: the bounds of issue 20 (docs/design.md §13), release binary, wall time and peak
# memory (/usr/bin/time):
#  1. A provider answering 100,000 findings per unit (about 4.5 MB, under the body cap)
#     to a 20-unit review with a 10 s budget, writing JSON and SARIF.
#     Goals: within the budget + 1 s, at most 300 MB.
#  2. `warden plan` on a change that adds a 200 MB one-line file (working tree, then a
#     commit range). Goals: at most 2 s, at most 120 MB.
#   usage: benches/bounds.sh [UNITS] [FINDINGS] [MEGABYTES]
# Measured (2 shared cores, release): the flood 0.85 s and 73.8 MiB, complete, 2,000 kept
# and 1,998,000 cut (before: 7.9 GB, 32-47 s); the 200 MB file 0.00-0.01 s and 9.7 MiB
# (before: 6.3 s, 609 MB).
set -euo pipefail
units=${1:-20}
findings=${2:-100000}
megabytes=${3:-200}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="$root/target/release/warden"
work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

measure() { # label, command... (exit codes other than 0 are reported, not fatal)
  local label=$1; shift
  local code=0
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>"$work/err" || code=$?
  # GNU time writes "Command exited with non-zero status N" first when it did.
  read -r secs kib < <(tail -n 1 "$work/time")
  printf '%-52s %7.2f s %8.1f MiB  exit %s\n' "$label" "$secs" "$(echo "$kib/1024" | bc -l)" "$code"
}

# ---- 1. the findings flood --------------------------------------------------------
python3 - "$findings" "$work/port" <<'PY' &
import json, sys, http.server, socketserver
n, port_file = int(sys.argv[1]), sys.argv[2]
found = [{"severity": "high", "title": f"f{i}", "line": 11 + i % 2} for i in range(n)]
text = json.dumps({"findings": found}, separators=(",", ":"))
body = json.dumps({"id": "x", "model": "flood", "choices": [{"index": 0,
    "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}).encode()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
open(port_file, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
server_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
mkdir "$work/flood" && cd "$work/flood"
git init -q -b main
for i in $(seq "$units"); do
  python3 -c "import sys; sys.stdout.write(''.join(f'    let f{sys.argv[1]}_{j} = compute({j});\n' for j in range(1, 11)))" "$i" >"f$i.rs"
done
git add -A && git -c user.name=b -c user.email=b@example.com commit -qm base
for i in $(seq "$units"); do
  python3 -c "import sys; sys.stdout.write(''.join(f'    let f{sys.argv[1]}_{j} = compute({j});\n' for j in range(1, 13)))" "$i" >"f$i.rs"
done
cat >"$work/flood.toml" <<TOML
version = 1
[execution]
reviewBudget = "10s"
hunkBudget = "10s"
[[routes]]
name = "flood"
provider = "openai"
model = "flood"
baseUrl = "http://127.0.0.1:$port/v1"
stream = false
maxConcurrency = 4
TOML
echo "findings flood: $units units x $findings findings ($(python3 -c "import json;print(round(len(json.dumps({'findings':[{'severity':'high','title':f'f{i}','line':11} for i in range($findings)]},separators=(',',':')))/1e6,1))") MB per answer), budget 10 s"
measure "warden review --json -o sarif (budget 10 s)" "$bin" review --skill code-review -c "$work/flood.toml" --no-cache --json -o "sarif=$work/flood.sarif"
python3 - "$work/out" "$work/flood.sarif" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
sarif = json.load(open(sys.argv[2]))
print(f"  outcome {r['outcome']}, {s['reviewed']}/{s['units']} reviewed, {s['findings']} findings kept, "
      f"findingsCut {s.get('findingsCut')}, durationMs {r['durationMs']}, "
      f"SARIF results {len(sarif['runs'][0]['results'])}")
PY
kill "$server_pid"; server_pid=

# ---- 2. a 200 MB one-line file ------------------------------------------------------
mkdir "$work/big" && cd "$work/big"
git init -q -b main
printf 'fn main() {}\n' >main.rs
git add -A && git -c user.name=b -c user.email=b@example.com commit -qm base
head -c "$((megabytes * 1000 * 1000))" /dev/zero | tr '\0' 'x' >big.txt
printf 'fn main() { run(); }\n' >main.rs
echo "a change adding a $megabytes MB one-line file"
measure "warden plan --json (working tree)" "$bin" plan --json -q
python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print('  ', [(s['path'], s['reason'], s['detail']) for s in p['skippedFiles']])" "$work/out"
git add -A && git -c user.name=b -c user.email=b@example.com commit -qm big
measure "warden plan --json HEAD~1..HEAD (blobs)" "$bin" plan --json -q HEAD~1..HEAD
python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print('  ', [(s['path'], s['reason'], s['detail']) for s in p['skippedFiles']])" "$work/out"
