#!/usr/bin/env bash
# kiln report's pages in headless Chromium (ctest label "browser"): writes
# the page of one scenario and checks it with tests/browser/check_page.mjs
# (every chart drawn, no console error, no request leaving the page), keeping
# the screenshot in OUT_DIR/SCENARIO.png. Exit 77 (skipped) without node,
# chromium or playwright-core.
# Usage: browser_report.sh KILN REPORT_FIXTURE SCENARIO OUT_DIR
#   SCENARIO: empty | one_task | bench_alone | fifty_tasks | model_curves
set -u
KILN="$1" FIXTURE="$2" SCENARIO="$3" OUT="$4"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$OUT"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v node >/dev/null || { echo "skipped: node not found (the browser checks run with Node.js)"; exit 77; }

page="$tmp/$SCENARIO.html"
min_charts=0
case "$SCENARIO" in
  empty)
    : > "$tmp/none.jsonl"
    "$KILN" import "$tmp/none.jsonl" --db "$tmp/e.db" >/dev/null || fail "kiln import"
    "$KILN" report --db "$tmp/e.db" --html "$page" >/dev/null || fail "kiln report"
    grep -qF "Nothing to show yet" "$page" || fail "the empty page does not say there is nothing to show"
    grep -qF "kiln tune " "$page" || fail "the empty page does not say how to tune"
    ;;
  one_task)
    "$KILN" tune matmul:M=32,N=32,K=32 --trials 16 --batch 8 --db "$tmp/k.db" >/dev/null 2>&1 || fail "kiln tune"
    "$KILN" report --db "$tmp/k.db" --html "$page" >/dev/null || fail "kiln report"
    min_charts=4  # roofline, two curves, ranking accuracy (and predictions)
    ;;
  bench_alone)
    "$FIXTURE" bench 6 > "$tmp/b.json" || fail "report_fixture bench"
    "$KILN" report --bench "$tmp/b.json" --html "$page" >/dev/null || fail "kiln report"
    min_charts=2  # bars, roofline
    ;;
  fifty_tasks)
    "$FIXTURE" records 50 1000 > "$tmp/r.jsonl" || fail "report_fixture records"
    "$KILN" import "$tmp/r.jsonl" --db "$tmp/s.db" >/dev/null || fail "kiln import"
    "$FIXTURE" bench 12 > "$tmp/b.json" || fail "report_fixture bench"
    "$KILN" report --db "$tmp/s.db" --bench "$tmp/b.json" --html "$page" >/dev/null || fail "kiln report"
    min_charts=100  # two curves per task, and more
    ;;
  model_curves)
    "$FIXTURE" model-curve gradient 24 > "$tmp/gradient.json" || fail "report_fixture model-curve gradient"
    "$FIXTURE" model-curve round-robin 24 > "$tmp/round-robin.json" || fail "report_fixture model-curve round-robin"
    "$KILN" report --model-curve "$tmp/gradient.json" --model-curve "$tmp/round-robin.json" --html "$page" \
      >/dev/null || fail "kiln report"
    grep -qF "Model tuning: estimated end-to-end latency against trials" "$page" || fail "no model tuning chart"
    min_charts=1  # both jobs on one chart
    ;;
  *) fail "unknown scenario '$SCENARIO'" ;;
esac
node "$HERE/browser/check_page.mjs" "$page" "$OUT/$SCENARIO.png" --min-charts "$min_charts"
