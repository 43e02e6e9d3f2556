# Two tunings of the same workloads (same trials, same seed): A with the
# prefetch knob free, B with --fix '{"prefetch":0}'. Each workload's best
# config of A and of B timed by `kiln run --db`, interleaved over 3 rounds.
import json, subprocess, sys, statistics
kiln, a_db, b_db, out = sys.argv[1:5]
ws = [l.strip() for l in open(sys.argv[5]) if l.strip() and not l.startswith('#')]
def run(w, db):
    p = subprocess.run([kiln, "run", w, "--db", db, "--json", "--repeat", "10", "--min-repeat-ms", "100"],
                       capture_output=True, text=True, check=True)
    j = json.loads(p.stdout)
    return j["median_ms"], j.get("config")
rows = {w: {"A": [], "B": []} for w in ws}
cfg = {}
for rnd in range(3):
    for w in ws:
        for k, db in (("A", a_db), ("B", b_db)):
            ms, c = run(w, db)
            rows[w][k].append(ms)
            cfg[(w, k)] = c
res = []
for w in ws:
    a, b = statistics.median(rows[w]["A"]), statistics.median(rows[w]["B"])
    res.append({"workload": w, "ms_with_knob": a, "ms_fixed_0": b, "speed_with_over_without": b / a,
                "prefetch_chosen": (cfg[(w, "A")] or {}).get("prefetch")})
    print(json.dumps(res[-1]), flush=True)
json.dump(res, open(out, "w"), indent=1)
