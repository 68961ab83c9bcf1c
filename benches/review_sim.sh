#!/usr/bin/env bash
# Benchmark: whole `warden review` runs on the built-in simulator, played 60x faster
# (budgets 15s/5s/2s stand for 15m/5m/2m).
#  1. The headline scenario (docs/design.md section 11): 200 units (100 changed files x 2
#     skills), primary slow-tail (cap 4), fallback healthy (cap 4), for seeds 1-5, with
#     routing = "ordered" and routing = "spillover" side by side.
#  2. A 60-unit review (30 files x 2 skills) under both policies, seeds 1-5.
#  3. `--sim=slow-tail` and `--sim=outage`: wall time against the budget, units
#     reviewed, attempts per unit.
#  4. `warden simulate` of the 200-unit plan, 5 runs x 2 policies: CPU and wall time.
#  5. One slow-tail route alone (ordered, cap 4), 200 units, `--no-tools`: units
#     reviewed and unavailable per seed, with the wall time; `warden simulate` over 100
#     seeds; and the ceiling: what 4 permits never idle could answer in the budget.
#  6. The 60-unit headline under both policies with the built-in skills' tool loops
#     against `--no-tools`: units reviewed per seed in process runs (the median of
#     REPEATS runs each), their medians, and `warden simulate --runs 100` of the same
#     config with tools on and off.
#   usage: benches/review_sim.sh [SEEDS [REPEATS]]
#   ONLY=6 runs section 6 alone (the others take about 10 minutes).
#   WARDEN_BIN=path/to/warden uses that binary instead of building a release one.
set -euo pipefail
seeds=${1:-5}
repeats=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${WARDEN_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml"
  bin="$root/target/release/warden"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_repo() { # DIR FILES
  mkdir -p "$1" && cd "$1"
  git init -q -b main
  python3 - "$2" <<'PY'
import os, sys
os.makedirs("src", exist_ok=True)
for f in range(int(sys.argv[1])):
    with open(f"src/m{f}.py", "w") as fh:
        fh.writelines(f"value_{i} = compute({i}, {f})\n" for i in range(40))
PY
  git add -A && git -c user.name=b -c user.email=b@example.com commit -qm base
  python3 - "$2" <<'PY'
import sys
for f in range(int(sys.argv[1])):
    p = f"src/m{f}.py"
    lines = open(p).read().splitlines(True)
    lines[20] = f"query = \"SELECT * FROM t WHERE id = \" + user_{f}\n"
    open(p, "w").writelines(lines)
PY
  cd - >/dev/null
}

config() { # ROUTING SEED [alone]
  primary "$1" "$2"
  [ "${3:-}" = alone ] && return
  cat <<TOML
[[routes]]
name = "fallback"
provider = "sim"
profile = "healthy"
timeScale = 60
seed = $((1000 + $2))
maxConcurrency = 4
TOML
}

primary() { # ROUTING SEED
  cat <<TOML
version = 1
[execution]
routing = "$1"
reviewBudget = "15s"
hunkBudget = "5s"
requestTimeout = "2s"
connectTimeout = "1s"
firstTokenTimeout = "1500ms"
idleTimeout = "500ms"
[execution.breaker]
window = "2s"
openFor = "500ms"
[[routes]]
name = "primary"
provider = "sim"
profile = "slow-tail"
timeScale = 60
seed = $2
maxConcurrency = 4
TOML
}

reviewed() { # REPO CONFIG -> units reviewed
  (cd "$1" && "$bin" review -c "$2" --no-cache --json -q >"$work/out.json" || true)
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["reviewed"])' "$work/out.json"
}

side_by_side() { # REPO UNITS
  printf '%-6s %8s %10s %7s\n' seed ordered spillover ratio
  local ratios=() spills=()
  for seed in $(seq 1 "$seeds"); do
    config ordered "$seed" >"$work/ordered.toml"
    config spillover "$seed" >"$work/spillover.toml"
    o=$(reviewed "$1" "$work/ordered.toml")
    s=$(reviewed "$1" "$work/spillover.toml")
    r=$(python3 -c "print(f'{$s/max(1,$o):.2f}')")
    printf '%-6s %8s %10s %6sx\n' "$seed" "$o" "$s" "$r"
    ratios+=("$r"); spills+=("$s")
  done
  python3 - "$2" "${ratios[*]}" "${spills[*]}" <<'PY'
import statistics, sys
units, ratios, spills = int(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split()
print(f"median spillover/ordered {statistics.median(map(float, ratios)):.2f}x; "
      f"median spillover reviewed {statistics.median(map(int, spills))} of {units}")
PY
}

make_repo "$work/r200" 100
make_repo "$work/r60" 30
if [ "${ONLY:-}" != 6 ]; then
echo "== headline: 200 units, slow-tail (cap 4) + healthy (cap 4), 15 min budget, x60"
side_by_side "$work/r200" 200
echo
echo "== 60 units, same routes and budget"
side_by_side "$work/r60" 60
echo
echo "== --sim profiles (ordered)"
printf '%-10s %8s %8s %9s %9s %9s %9s %13s\n' profile units wall_s budget_s reviewed skipped other attempts/unit
for profile in slow-tail outage; do
  (cd "$work/r200" && /usr/bin/time -f "%e" -o "$work/time" "$bin" review --sim="$profile" --no-cache --json -q >"$work/out.json" || true)
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
echo
echo "== warden simulate: 200 units x 5 runs x 2 policies"
config ordered 1 >"$work/ordered.toml"
(cd "$work/r200" && /usr/bin/time -f "%e %U %S" -o "$work/time" "$bin" simulate -c "$work/ordered.toml" --runs 5 >"$work/sim.txt")
cat "$work/sim.txt"
read -r wall user sys <"$work/time"
echo "simulate: wall ${wall}s, cpu $(python3 -c "print(f'{$user+$sys:.2f}')")s"
echo
echo "== one slow-tail route alone (ordered, cap 4), 200 units, --no-tools"
printf '%-6s %9s %12s %7s\n' seed reviewed unavailable wall_s
for seed in $(seq 1 "$seeds"); do
  config ordered "$seed" alone >"$work/alone.toml"
  (cd "$work/r200" && /usr/bin/time -f "%e" -o "$work/time" "$bin" review -c "$work/alone.toml" --no-tools --no-cache --json -q >"$work/out.json" || true)
  python3 - "$seed" "$work/out.json" "$(tail -n 1 "$work/time")" <<'PY'
import json, sys
s = json.load(open(sys.argv[2]))["summary"]
print(f'{sys.argv[1]:<6} {s["reviewed"]:>9} {s["unavailable"]:>12} {float(sys.argv[3]):>7.1f}')
PY
done
config ordered 1 alone | sed 's/^routing = /tools = false\nrouting = /' >"$work/alone.toml"
echo "simulate, 100 seeds: $(cd "$work/r200" && "$bin" simulate -c "$work/alone.toml" --runs 100 | sed -n 3p)"
# The ceiling: the route's 4 permits busy back to back for the whole 15 s with no gap,
# each attempt drawn from the slow-tail profile (log-normal median 1.5 s, p95 6.2 s at
# 60x; 3 % slow errors of 0.5-58 s) under the 2 s deadline and the 1.5 s first-token clock
# (the first token comes after a quarter of the answer), over 2000 draws.
python3 - <<'PY'
import math, random, statistics
mu, s = math.log(1.5), math.log(6.2 / 1.5) / 1.645
def answers(seed):
    rnd, n = random.Random(seed), 0
    for _ in range(4):
        t = 0.0
        while t < 15:
            deadline = min(2.0, 15 - t)
            if rnd.random() < 0.03:
                t += min(rnd.uniform(0.5, 58), deadline)
                continue
            latency = min(math.exp(rnd.gauss(mu, s)), 45)
            if latency / 4 > min(1.5, deadline):
                t += min(1.5, deadline)
            elif latency <= deadline:
                n, t = n + 1, t + latency
            else:
                t += deadline
    return n
r = sorted(answers(i) for i in range(2000))
print(f"ceiling (permits never idle): median {statistics.median(r)}, p25-p75 {r[500]}-{r[1500]}")
PY
echo
fi
echo "== 60 units: tool loops vs --no-tools, process runs (median of $repeats per seed) and simulate"
median_reviewed() { # REPO CONFIG [FLAGS] -> median units reviewed over $repeats runs
  local got=()
  for _ in $(seq 1 "$repeats"); do
    (cd "$1" && "$bin" review -c "$2" ${3:-} --no-cache --json -q >"$work/out.json" || true)
    got+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["reviewed"])' "$work/out.json")")
  done
  python3 -c 'import statistics,sys; print(int(statistics.median(map(int, sys.argv[1:]))))' "${got[@]}"
}
for routing in ordered spillover; do
  echo "-- $routing"
  printf '%-6s %6s %12s\n' seed loops single-shot
  loops=() singles=()
  for seed in $(seq 1 "$seeds"); do
    config "$routing" "$seed" >"$work/h.toml"
    l=$(median_reviewed "$work/r60" "$work/h.toml")
    n=$(median_reviewed "$work/r60" "$work/h.toml" --no-tools)
    printf '%-6s %6s %12s\n' "$seed" "$l" "$n"
    loops+=("$l"); singles+=("$n")
  done
  python3 - "${loops[*]}" "${singles[*]}" "$routing" <<'PY'
import statistics, sys
l, n = (statistics.median(map(int, a.split())) for a in sys.argv[1:3])
print(f"{sys.argv[3]} process runs: median loops {l} / single-shot {n} of 60 ({100 * l / max(1, n):.0f} %)")
PY
done
config ordered 1 >"$work/h.toml"
sed 's/^routing = /tools = false\nrouting = /' "$work/h.toml" >"$work/h_off.toml"
for t in h h_off; do
  echo "simulate ($t, 100 seeds):"
  (cd "$work/r60" && "$bin" simulate -c "$work/$t.toml" --runs 100 | head -n 4)
done
