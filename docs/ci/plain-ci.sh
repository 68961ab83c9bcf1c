#!/usr/bin/env sh
# warden in any CI that runs a shell: review the branch against its base, keep the
# reports as build artifacts, and turn warden's exit code into the job's result.
#
#   BASE=main OPENROUTER_API_KEY=... sh docs/ci/plain-ci.sh
set -u

BASE="${BASE:-main}"
OUT="${OUT:-warden-reports}"
mkdir -p "$OUT"

command -v warden >/dev/null 2>&1 || cargo install --locked --git https://github.com/warden-review/warden

git fetch --quiet origin "$BASE" || true

# Text for the log; JSON, SARIF and the comment body for artifacts. Every file is created
# before the first model request, so a bad path fails at once (exit 2) and costs nothing.
warden review "origin/$BASE...HEAD" --budget 15m --color never \
  -o "json=$OUT/warden.json" \
  -o "sarif=$OUT/warden.sarif" \
  -o "markdown=$OUT/warden-comment.md"
code=$?

case "$code" in
  0) echo "warden: reviewed, nothing at the fail-on severity" ;;
  1) echo "warden: findings at the fail-on severity (see $OUT/)" ;;
  2) echo "warden: usage or config error (nothing was reviewed)" ;;
  3) echo "warden: NOT every unit was reviewed; see 'Not reviewed' in $OUT/warden-comment.md" ;;
  *) echo "warden: stopped (exit $code)" ;;
esac
exit "$code"
