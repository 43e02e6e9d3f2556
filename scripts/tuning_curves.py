#!/usr/bin/env python3
"""Best-so-far GFLOP/s versus trials, from `kiln export` JSON-lines files.

  scripts/tuning_curves.py OUT.csv LABEL=FILE.jsonl [LABEL=FILE.jsonl ...]

Writes one CSV row per (label, workload, trial): the best GFLOP/s among the
first `trial` records of that workload, in the order they were measured.
"""
import csv
import json
import sys
from collections import defaultdict


def curves(path):
    by_workload = defaultdict(list)
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                by_workload[r["workload"]].append(r)
    out = {}
    for w, recs in by_workload.items():
        recs.sort(key=lambda r: (r.get("timestamp", 0), r.get("id", 0)))
        best, curve = 0.0, []
        for r in recs:
            if r.get("error", "none") == "none":
                best = max(best, float(r.get("gflops", 0.0)))
            curve.append(best)
        out[w] = curve
    return out


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    with open(argv[1], "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["label", "workload", "trial", "best_gflops"])
        for spec in argv[2:]:
            label, _, path = spec.partition("=")
            for w, curve in curves(path).items():
                for i, g in enumerate(curve, 1):
                    out.writerow([label, w, i, f"{g:.3f}"])


if __name__ == "__main__":
    main(sys.argv)
