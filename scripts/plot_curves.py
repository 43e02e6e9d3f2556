#!/usr/bin/env python3
"""Plots tuning curves (CSV from scripts/tuning_curves.py) as SVG, one chart
per workload, one line per label; no plotting library needed.

  scripts/plot_curves.py curves.csv out_prefix
"""
import csv
import sys
from collections import defaultdict

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def chart(workload, series, path):
    w, h, m = 640, 400, 60
    max_x = max(len(c) for c in series.values())
    max_y = max(max(c) for c in series.values()) * 1.05 or 1
    sx = lambda x: m + (w - 2 * m) * (x - 1) / max(1, max_x - 1)
    sy = lambda y: h - m + -(h - 2 * m) * y / max_y
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{w/2}" y="20" text-anchor="middle">{workload}</text>',
             f'<line x1="{m}" y1="{h-m}" x2="{w-m}" y2="{h-m}" stroke="black"/>',
             f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h-m}" stroke="black"/>',
             f'<text x="{w/2}" y="{h-20}" text-anchor="middle">trials</text>',
             f'<text x="15" y="{h/2}" transform="rotate(-90 15 {h/2})" text-anchor="middle">best GFLOP/s</text>']
    for t in range(0, 6):
        y = max_y * t / 5
        parts.append(f'<text x="{m-5}" y="{sy(y)+4:.1f}" text-anchor="end">{y:.0f}</text>')
        x = 1 + (max_x - 1) * t / 5
        parts.append(f'<text x="{sx(x):.1f}" y="{h-m+15}" text-anchor="middle">{x:.0f}</text>')
    for i, (label, curve) in enumerate(sorted(series.items())):
        pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in enumerate(curve, 1))
        color = COLORS[i % len(COLORS)]
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{pts}"/>')
        parts.append(f'<text x="{w-m+5}" y="{m+15*i}" fill="{color}">{label}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    data = defaultdict(lambda: defaultdict(list))
    with open(argv[1]) as f:
        for row in csv.DictReader(f):
            data[row["workload"]][row["label"]].append(float(row["best_gflops"]))
    for n, (workload, series) in enumerate(sorted(data.items())):
        path = f"{argv[2]}_{workload.split(':')[0]}_{n}.svg"
        chart(workload, series, path)
        print(path)


if __name__ == "__main__":
    main(sys.argv)
