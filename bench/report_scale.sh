#!/usr/bin/env bash
# kiln report at scale (issue 19): a synthetic database of 50 tasks with
# 1,000 trials each (bench/programs/report_fixture.cpp: real workload
# shapes, errors of every kind, model predictions, two jobs) plus a bench
# result of 12 workloads. Prints the time `kiln report` takes to build the
# page (best and median of 5 runs), the page's size, and, where Chromium and
# tests/browser's playwright-core are installed, how long the browser takes
# to draw every chart. Pause other work on the machine while it runs.
#
#   bench/report_scale.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
KILN="$BUILD/kiln"
FIXTURE="$BUILD/bench/report_fixture"
[ -x "$KILN" ] && [ -x "$FIXTURE" ] || { echo "build kiln and report_fixture in $BUILD first" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$FIXTURE" records 50 1000 > "$TMP/records.jsonl"
"$KILN" import "$TMP/records.jsonl" --db "$TMP/k.db" >/dev/null 2>&1
"$FIXTURE" bench 12 > "$TMP/bench.json"
echo "database: $(du -h "$TMP/k.db" | cut -f1), 50 tasks x 1000 trials; bench result: 12 workloads"

times=()
for i in 1 2 3 4 5; do
  start=$(date +%s.%N)
  "$KILN" report --db "$TMP/k.db" --bench "$TMP/bench.json" --html "$TMP/report.html" >/dev/null
  end=$(date +%s.%N)
  times+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')")
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
echo "kiln report: best $(head -1 <<<"$sorted") s, median $(sed -n 3p <<<"$sorted") s over 5 runs (${times[*]})"
bytes=$(stat -c %s "$TMP/report.html")
charts=$(grep -o 'data-charts-expected="[0-9]*"' "$TMP/report.html" | grep -o '[0-9]*')
echo "page: $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.2f MB", b / 1e6 }')), $charts charts"
if command -v node >/dev/null; then
  node tests/browser/check_page.mjs "$TMP/report.html" "$TMP/report.png" --min-charts 100 || true
fi
