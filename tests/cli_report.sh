#!/usr/bin/env bash
# `kiln report` end to end: a page from a small tuning job (tuned with a live
# report) and a bench result; `kiln probe`; user errors exit 2 with their
# message and leave the inputs as they were. Drawing the pages in a browser
# is the "browser" tests' job (browser_report.sh).
# Usage: cli_report.sh path/to/kiln
set -u
KILN="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"

# A live report: written before the first batch and after every one; the
# machine probe runs once and its figures are stored.
out=$("$KILN" tune matmul:M=16,N=16,K=16 --trials 6 --batch 3 --db "$tmp/k.db" --report "$tmp/live.html" 2>&1) ||
  fail "kiln tune --report: $out"
grep -qF "live report: $tmp/live.html" <<<"$out" || fail "tune does not name its live report: $out"
grep -qF "machine probe:" <<<"$out" || fail "the first tune of a database did not probe the machine: $out"
grep -qF "Written " "$tmp/live.html" || fail "the live report says nothing of when it was written"
grep -qF "http-equiv=\"refresh\"" "$tmp/live.html" && fail "the final live report still reloads itself"
ls "$tmp"/live.html.tmp.* >/dev/null 2>&1 && fail "a temporary report file was left behind"
out=$("$KILN" tune matmul:M=16,N=16,K=16 --trials 9 --batch 3 --db "$tmp/k.db" 2>&1) || fail "kiln tune (resume): $out"
grep -qF "machine probe:" <<<"$out" && fail "the machine was probed again: $out"

printf 'matmul:M=16,N=16,K=16\n' > "$tmp/s.txt"
"$KILN" bench --suite "$tmp/s.txt" --db "$tmp/k.db" --baselines openblas --rounds 1 --repeat 1 --min-repeat-ms 1 \
  --json "$tmp/b.json" >/dev/null 2>&1 || fail "kiln bench"
grep -qF '"machine_probe"' "$tmp/b.json" || fail "the bench result has no machine figures"
out=$("$KILN" report --db "$tmp/k.db" --html "$tmp/r.html" --bench "$tmp/b.json" 2>&1) || fail "kiln report: $out"
grep -qE "^wrote $tmp/r.html: [0-9]+ charts, [0-9]+ KiB$" <<<"$out" || fail "report summary: $out"
for want in "matmul:M=16,N=16,K=16" "Suite s" "Roofline" "pairwise ranking accuracy on each batch" \
    "predicted score against measured throughput" "data-charts-expected=" "Released under the MIT License"; do
  grep -qF "$want" "$tmp/r.html" || fail "report lacks '$want'"
done
out=$("$KILN" report --bench "$tmp/b.json" --html "$tmp/bench-only.html" 2>&1) || fail "bench alone: $out"
# A `kiln tune-model --curve` file alone: the chart of latency against trials.
cat > "$tmp/curve.json" <<'EOF_CURVE'
{"model": "/m/cls.onnx", "scheduler": "round-robin", "db": "a.db", "initial_estimated_ms": 5.0,
 "measured_before_ms": 5.1, "measured_after_ms": 4.3, "elapsed_s": 12.0,
 "curve": [{"round": 0, "workload": "matmul:M=16,N=16,K=16", "trials": 8, "best_ms": 0.01, "estimated_ms": 4.6,
            "elapsed_s": 3.0}]}
EOF_CURVE
out=$("$KILN" report --model-curve "$tmp/curve.json" --html "$tmp/curve.html" 2>&1) || fail "model curve alone: $out"
grep -qF "Model tuning: estimated end-to-end latency against trials" "$tmp/curve.html" ||
  fail "the model curve's chart is missing"
grep -qF "round-robin (cls.onnx, a.db)" "$tmp/curve.html" || fail "the model curve's line is not labelled"

out=$("$KILN" probe --db "$tmp/p.db" 2>&1) || fail "kiln probe: $out"
grep -qE "fp32 peak [0-9.]+ GFLOP/s" <<<"$out" && grep -qF "stored in $tmp/p.db" <<<"$out" || fail "kiln probe: $out"

# User errors: exit 2, a message in the user's terms, inputs untouched.
cp "$tmp/k.db" "$tmp/k.copy"
expect 2 "no tuning database at" -- report --db "$tmp/none.db" --html "$tmp/x.html"
echo '{"a": 1}' > "$tmp/notbench.json"
expect 2 "is not a \`kiln bench --json\` result" -- report --db "$tmp/k.db" --html "$tmp/x.html" --bench "$tmp/notbench.json"
head -c 100 "$tmp/b.json" > "$tmp/cut.json"
expect 2 "is truncated" -- report --bench "$tmp/cut.json" --html "$tmp/x.html"
expect 2 "never writes over its input" -- report --db "$tmp/k.db" --html "$tmp/k.db"
expect 2 "never writes over its input" -- report --db "$tmp/k.db" --bench "$tmp/b.json" --html "$tmp/b.json"
expect 2 "needs --db FILE, --bench FILE, --model-curve FILE" -- report --html "$tmp/x.html"
expect 2 "it lacks \"model\"" -- report --model-curve "$tmp/b.json" --html "$tmp/x.html"
expect 2 "never writes over its input" -- report --model-curve "$tmp/curve.json" --html "$tmp/curve.json"
cmp -s "$tmp/k.db" "$tmp/k.copy" || fail "kiln report changed its input database"
grep -qF '"machine_probe"' "$tmp/b.json" || fail "kiln report changed its input bench result"
KILN_CHARTJS="$tmp/none.js" expect 2 "install Debian's package libjs-chart.js" -- report --db "$tmp/k.db" --html "$tmp/x.html"
expect 2 "cannot write" -- tune matmul:M=16,N=16,K=16 --trials 1 --db "$tmp/k.db" --report "$tmp/no/such/dir/r.html"

finish cli_report
