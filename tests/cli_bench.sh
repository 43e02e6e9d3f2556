#!/usr/bin/env bash
# `kiln bench` end to end: the smoke suite (CI's benchmark run: tiny shapes,
# every available baseline, one short round), its JSON and Markdown
# outputs, tuning on the spot, and the user errors (exit code 2).
# Usage: cli_bench.sh path/to/kiln
set -u
KILN="$1"
export HL_BEAM_SIZE=1  # greedy Adams2019: seconds for the smoke suite
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"


# The smoke suite with every baseline this build has.
expect 0 "geomean kiln/oneDNN" -- bench --suite smoke --rounds 1 --repeat 1 --min-repeat-ms 1 \
  --json "$tmp/smoke.json" --md "$tmp/smoke.md"
python3 - "$tmp/smoke.json" <<'PY' || fails=$((fails + 1))
import json, sys
r = json.load(open(sys.argv[1]))
# oneDNN runs bf16 kernels only on CPUs with AVX-512 (BW); elsewhere its
# contender may be an error (n/a in the table), nothing else.
flags = next((l.split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
onednn_bf16 = "avx512bw" in flags
def refused_here(workload, name, res):
    return (name == "onednn" and "bf16" in workload and not onednn_bf16
            and res.get("error", "").startswith("oneDNN cannot run"))
assert r["suite"] == "smoke" and len(r["workloads"]) >= 10, r["suite"]
for w in r["workloads"]:
    for name, res in w["results"].items():
        if refused_here(w["workload"], name, res):
            continue
        assert res.get("check", "ok") == "ok", (w["workload"], name, res)
        assert "error" not in res, (w["workload"], name, res)
    assert "onednn" in w["results"], w["workload"]
    # A fused op also runs as its unfused kiln kernels, checked the same way,
    # and never counts as a baseline.
    assert ("kiln_unfused" in w["results"]) == w["workload"].startswith("dwsep_nchwc"), w["workload"]
    assert w.get("best_baseline") != "kiln_unfused", w["workload"]
    assert w["bytes"] > 0, w["workload"]
assert "onednn" in r["geomean"] and "openblas" in r["geomean"], r["geomean"]
assert "kiln_unfused" not in r["geomean"], r["geomean"]
PY
grep -qF "| workload | kiln | kiln unfused | oneDNN |" "$tmp/smoke.md" || { echo "FAIL: no Markdown table"; fails=$((fails + 1)); }

# Tuning on the spot into a database, then kiln runs the tuned config.
printf 'matmul:M=16,N=16,K=16\n' > "$tmp/one.txt"
expect 0 "tuned matmul:M=16,N=16,K=16" -- bench --suite "$tmp/one.txt" --db "$tmp/t.db" --tune-trials 4 \
  --baselines openblas --rounds 1 --repeat 1 --min-repeat-ms 1 --json "$tmp/one.json"
grep -qF '"kiln_config": "database"' "$tmp/one.json" || { echo "FAIL: tuned config not used"; fails=$((fails + 1)); }

# User errors: exit code 2 and a message in the user's terms.
expect 2 "unknown suite 'nope'" -- bench --suite nope
printf 'matmul:M=2,N=2,K=2\nwinograd:M=2\n' > "$tmp/bad.txt"
expect 2 "line 2: unknown op 'winograd'" -- bench --suite "$tmp/bad.txt"
expect 2 "unknown baseline 'mkl'" -- bench --suite smoke --baselines onednn,mkl
expect 2 "--tune-trials needs --db" -- bench --suite smoke --tune-trials 3
expect 2 "does not exist" -- bench --suite "$tmp/missing.txt"
expect 2 "--suite is required" -- bench

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "all bench checks passed"
