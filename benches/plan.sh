#!/usr/bin/env bash
# Benchmark: `warden plan` on a repository with 5,000 changed files (~50,000 hunks),
# against `git diff --stat` on the same repository. Prints wall time and peak memory.
#   usage: benches/plan.sh [FILES] [HUNKS_PER_FILE]
set -euo pipefail
files=${1:-5000}
hunks=${2:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin="$root/target/release/warden"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/repo" && cd "$work/repo"
git init -q -b main
python3 - "$files" "$hunks" <<'PY'
import os, sys
files, hunks = int(sys.argv[1]), int(sys.argv[2])
lines = hunks * 20
for f in range(files):
    d = f"src/m{f // 100}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/f{f}.rs", "w") as fh:
        fh.writelines(f"    let v{i} = compute({i}, {f});\n" for i in range(lines))
PY
git add -A && git -c user.name=b -c user.email=b@example.com commit -qm base
python3 - "$files" "$hunks" <<'PY'
import sys
files, hunks = int(sys.argv[1]), int(sys.argv[2])
for f in range(files):
    p = f"src/m{f // 100}/f{f}.rs"
    lines = open(p).read().splitlines(True)
    for h in range(hunks):
        lines[h * 20 + 10] = f"    let changed{h} = compute_changed({h}, {f});\n"
    open(p, "w").writelines(lines)
PY
measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
  read -r secs kib <"$work/time"
  printf '%-44s %8.2f s %10.1f MiB\n' "$label" "$secs" "$(echo "$kib/1024" | bc -l)"
}
echo "repository: $files changed files, $((files * hunks)) hunks"
measure "git diff --stat" git diff --stat
measure "warden plan --json (default caps)" "$bin" plan --json -q
printf 'version = 1\n[defaults.scan]\nmaxFiles = 1000000\nmaxChangedLines = 100000000\n' >"$work/all.toml"
measure "warden plan --json (no caps: all files)" "$bin" plan --json -q -c "$work/all.toml"
"$bin" plan --json -q -c "$work/all.toml" | python3 -c 'import json,sys; t=json.load(sys.stdin)["totals"]; print("plan totals (no caps):", t)'
