#!/usr/bin/env python3
"""Draws P@1 against training time (and against epochs) for every algorithm of a
`hetsgd compare` / `hetsgd train --log` curve file, CSV or JSONL, into a PNG.

Usage: plot_curves.py --input curves.csv --output p1.png [--title TEXT] [--target 0.6]
Needs python3 and matplotlib (Debian: python3-matplotlib); uses the Agg backend, so it runs
without a display.
"""
import argparse
import csv
import json
import sys


def read_curves(path):
    """Returns {algo: [(time_s, epoch, p1), ...]} in file order."""
    rows = []
    with open(path, newline="") as f:
        if path.endswith(".jsonl") or path.endswith(".json"):
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise SystemExit(f"{path}:{n}: not JSON: {e}")
        else:
            rows = list(csv.DictReader(f))
    curves = {}
    for n, r in enumerate(rows, 1):
        # `train --log` ends with the saved model's record, which is no point of the curve.
        if r.get("record") == "final":
            continue
        try:
            point = (float(r["time_s"]), float(r["epoch"]), float(r["p1"]))
        except (KeyError, ValueError) as e:
            raise SystemExit(f"{path}: record {n}: missing or bad field {e}")
        curves.setdefault(r.get("algo", "run"), []).append(point)
    return curves


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", required=True, help="curve file (.csv or .jsonl)")
    ap.add_argument("--output", required=True, help="PNG to write")
    ap.add_argument("--title", default="", help="figure title")
    ap.add_argument("--target", type=float, default=0.0, help="draw a target P@1 line")
    args = ap.parse_args(argv)

    curves = read_curves(args.input)
    if not curves:
        raise SystemExit(f"{args.input}: no evaluation records")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(11, 4.2))
    for algo, pts in curves.items():
        ax_t.plot([p[0] for p in pts], [p[2] for p in pts], marker=".", label=algo)
        ax_e.plot([p[1] for p in pts], [p[2] for p in pts], marker=".", label=algo)
    for ax, xlabel in ((ax_t, "training time (s, evaluation excluded)"), (ax_e, "epochs")):
        if args.target > 0:
            ax.axhline(args.target, color="grey", linestyle="--", linewidth=1, label="target")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("P@1 (test)")
        ax.grid(True, alpha=0.3)
    ax_t.legend(loc="lower right")
    if args.title:
        # Wrapped at words to the figure's width (about 110 characters at this size), and room
        # kept above the axes, so a long data description is neither cut nor overlapping.
        import textwrap

        lines = textwrap.wrap(args.title, width=110)
        fig.suptitle("\n".join(lines), fontsize=10)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.06 * len(lines)))
    else:
        fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
