#!/usr/bin/env bash
# Benchmark: a whole `warden review --sim` of 200 units (100 changed files x 2 skills) for
# the slow-tail and outage profiles: wall time against the (scaled) budget, units reviewed,
# attempts per unit. The simulator plays provider minutes in seconds (x60), budgets 15s/5s/2s.
#   usage: benches/review_sim.sh [FILES]
set -euo pipefail
files=${1:-100}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="$root/target/release/warden"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/repo" && cd "$work/repo"
git init -q -b main
python3 - "$files" <<'PY'
import os, sys
for f in range(int(sys.argv[1])):
    os.makedirs("src", exist_ok=True)
    with open(f"src/m{f}.py", "w") as fh:
        fh.writelines(f"value_{i} = compute({i}, {f})\n" for i in range(40))
PY
git add -A && git -c user.name=b -c user.email=b@example.com commit -qm base
python3 - "$files" <<'PY'
import sys
for f in range(int(sys.argv[1])):
    p = f"src/m{f}.py"
    lines = open(p).read().splitlines(True)
    lines[20] = f"query = \"SELECT * FROM t WHERE id = \" + user_{f}\n"
    open(p, "w").writelines(lines)
PY
printf '%-10s %8s %8s %9s %9s %9s %9s %13s\n' profile units wall_s budget_s reviewed skipped other attempts/unit
for profile in slow-tail outage; do
  /usr/bin/time -f "%e" -o "$work/time" "$bin" review --sim="$profile" --no-cache --json -q >"$work/out.json" || true
  python3 - "$profile" "$work/out.json" "$(tail -n 1 "$work/time")" <<'PY'
import json, sys
profile, path, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = json.load(open(path))
s = r["summary"]
attempts = sum(len(u["attempts"]) for u in r["units"])
started = [u for u in r["units"] if u["attempts"]]
other = s["units"] - s["reviewed"] - s["skipped"]
print(f'{profile:<10} {s["units"]:>8} {wall:>8.1f} {r["budgetMs"]/1000:>9.1f} {s["reviewed"]:>9} {s["skipped"]:>9} {other:>9} {attempts/max(1,len(started)):>13.2f}')
PY
done
