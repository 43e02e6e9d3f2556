# The prefetch knob's effect on tuned configs. Per workload: the best config
# the tuning found with prefetch free ("tuned"), the best it found among
# configs with prefetch 0 ("tuned, no prefetch"), and "tuned" with its
# prefetch forced to 0. Each timed by `kiln run --config`, interleaved over 3
# rounds; the median of the rounds' medians is reported.
import json, subprocess, sys, statistics
db, kiln, out = sys.argv[1], sys.argv[2], sys.argv[3]
subprocess.run([kiln, "export", "--db", db, "--jsonl", out + ".jsonl"], check=True, capture_output=True)
recs = [json.loads(l) for l in open(out + ".jsonl") if l.strip()]
best, best0 = {}, {}
for r in recs:
    if r["error"] != "none": continue
    w = r["workload"]; pf = r["config"].get("prefetch", 0)
    if w not in best or r["median_ms"] < best[w]["median_ms"]: best[w] = r
    if pf == 0 and (w not in best0 or r["median_ms"] < best0[w]["median_ms"]): best0[w] = r
def run(w, cfg):
    p = subprocess.run([kiln, "run", w, "--config", json.dumps(cfg), "--json", "--repeat", "10", "--min-repeat-ms", "100"],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["median_ms"]
rows = {w: {"tuned": [], "tuned_no_prefetch": [], "tuned_prefetch_off": []} for w in best}
for rnd in range(3):
    for w in best:
        rows[w]["tuned"].append(run(w, best[w]["config"]))
        if w in best0: rows[w]["tuned_no_prefetch"].append(run(w, best0[w]["config"]))
        off = dict(best[w]["config"]); off["prefetch"] = 0
        rows[w]["tuned_prefetch_off"].append(run(w, off))
res = []
for w in best:
    m = {k: statistics.median(v) for k, v in rows[w].items() if v}
    res.append({"workload": w, "trials": sum(1 for r in recs if r["workload"] == w),
                "chosen_prefetch": best[w]["config"].get("prefetch", 0), "ms": m,
                "tuned_over_tuned_no_prefetch": m["tuned_no_prefetch"] / m["tuned"] if "tuned_no_prefetch" in m else None,
                "prefetch_effect_on_best": m["tuned_prefetch_off"] / m["tuned"]})
    print(json.dumps(res[-1]), flush=True)
json.dump(res, open(out, "w"), indent=1)
