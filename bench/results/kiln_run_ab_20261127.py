#!/usr/bin/env python3
"""Times workloads (and configs or tuned databases) with two kiln builds, interleaved by round:
usage: kiln_run_ab_20261127.py KILN_BEFORE KILN_AFTER CASES.json [ROUNDS]; CASES is a JSON list of
[workload, knob-values-or-null, database-or-null]. Prints the medians (ms) and before/after."""
import json, subprocess, sys, statistics
before, after = sys.argv[1], sys.argv[2]
cases = json.load(open(sys.argv[3]))  # [[workload, config-json-or-null, db-or-null], ...]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
res = {}
def run(binary, w, cfg, db):
    cmd = [binary, 'run', w, '--json', '--repeat', '10', '--min-repeat-ms', '60']
    if cfg: cmd += ['--config', json.dumps(cfg)]
    if db: cmd += ['--db', db]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0: return None
    j = json.loads(out.stdout.strip().splitlines()[-1])
    return j
for r in range(rounds):
    for i, (w, cfg, db) in enumerate(cases):
        for tag, b in (('before', before), ('after', after)) if r % 2 == 0 else (('after', after), ('before', before)):
            j = run(b, w, cfg, db)
            res.setdefault((i, tag), []).append(j['median_ms'] if j else float('nan'))
for i, (w, cfg, db) in enumerate(cases):
    b = statistics.median(res[(i, 'before')]); a = statistics.median(res[(i, 'after')])
    print(f"{b:8.4f} {a:8.4f}  {b/a:5.3f}x  {w} {json.dumps(cfg) if cfg else ''} {db or ''}")
