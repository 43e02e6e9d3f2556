#!/usr/bin/env python3
"""A refine knob's effect on tuned configs (prefetch_knob_measure.py for any knob).
usage: refine_knob_measure.py KNOB OFF DB KILN OUT.json [ROUNDS]
OFF is the knob's first option (the value the search holds it at), as JSON.
Per workload of DB: the best config of the whole tuning ("with"), the best
among configs with KNOB at OFF ("without": the search alone), and "with" with
its KNOB forced to OFF. Each timed by `kiln run --config` (10 repeats of 100
ms), interleaved over ROUNDS rounds (default 3); medians of the rounds in ms."""
import json, statistics, subprocess, sys

knob, off, db, kiln, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 3
subprocess.run([kiln, "export", "--db", db, "--jsonl", out + ".jsonl"], check=True, capture_output=True)
recs = [json.loads(l) for l in open(out + ".jsonl") if l.strip()]
best, best_off, tried = {}, {}, {}
for r in recs:
    if r["error"] != "none":
        continue
    w, v = r["workload"], r["config"].get(knob, off)
    if v != off:
        tried[w] = tried.get(w, 0) + 1
    if w not in best or r["median_ms"] < best[w]["median_ms"]:
        best[w] = r
    if v == off and (w not in best_off or r["median_ms"] < best_off[w]["median_ms"]):
        best_off[w] = r


def run(w, cfg):
    p = subprocess.run([kiln, "run", w, "--config", json.dumps(cfg), "--json", "--repeat", "10", "--min-repeat-ms",
                        "100"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["median_ms"]


rows = {w: {"with": [], "without": [], "with_forced_off": []} for w in best}
for _ in range(rounds):
    for w in best:
        forced = dict(best[w]["config"])
        forced[knob] = off
        rows[w]["with"].append(run(w, best[w]["config"]))
        rows[w]["without"].append(run(w, best_off[w]["config"]))
        rows[w]["with_forced_off"].append(run(w, forced))
res = []
for w in best:
    m = {k: statistics.median(v) for k, v in rows[w].items()}
    res.append({"workload": w, "trials": sum(1 for r in recs if r["workload"] == w),
                "trials_with_knob_on": tried.get(w, 0), "chosen": best[w]["config"].get(knob, off),
                "same_config": best[w]["config"] == best_off[w]["config"], "ms": m,
                "speed_with_over_without": m["without"] / m["with"],
                "speed_with_over_forced_off": m["with_forced_off"] / m["with"]})
    print(json.dumps(res[-1]), flush=True)
json.dump(res, open(out, "w"), indent=1)
