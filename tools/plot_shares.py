#!/usr/bin/env python3
"""Draws the JSON report of `hetsgd share --json` as a PNG.

Left: for each policy, one stacked bar per device type showing the fraction of that type each
tenant holds (the unassigned part is left blank). Right: each tenant's absolute throughput
(samples/s) per policy. Emulated numbers are labelled as such in the title.

Usage: plot_shares.py report.json [-o shares.png]
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", help="JSON written by `hetsgd share --json`")
    ap.add_argument("-o", "--output", default="shares.png", help="PNG to write (default shares.png)")
    args = ap.parse_args()
    try:
        with open(args.report) as f:
            rep = json.load(f)
        policies = rep["policies"]
        tenants = rep["tenants"]
        types = rep["types"]
    except (OSError, ValueError, KeyError) as e:
        print(f"{args.report}: cannot read share report: {e}", file=sys.stderr)
        return 1

    fig, (ax_share, ax_tp) = plt.subplots(1, 2, figsize=(6 + 1.2 * len(policies) * len(types), 4.5))
    colours = plt.get_cmap("tab10")
    width = 0.8 / max(1, len(types))
    for p, pol in enumerate(policies):
        for j, typ in enumerate(types):
            x = p + (j - (len(types) - 1) / 2) * width
            bottom = 0.0
            for i, t in enumerate(pol["tenants"]):
                h = t["share"][j]
                ax_share.bar(x, h, width * 0.95, bottom=bottom, color=colours(i % 10),
                             label=t["name"] if p == 0 and j == 0 else None)
                bottom += h
            ax_share.text(x, 1.01, typ, ha="center", va="bottom", fontsize=7, rotation=90)
    ax_share.set_xticks(range(len(policies)))
    ax_share.set_xticklabels([pol["policy"] for pol in policies], rotation=30, ha="right")
    ax_share.set_ylim(0, 1.25)
    ax_share.set_ylabel("fraction of the type's devices")
    ax_share.legend(fontsize=8, loc="upper right")
    ax_share.set_title("shares per device type")

    bw = 0.8 / max(1, len(tenants))
    for i, name in enumerate(tenants):
        xs = [p + (i - (len(tenants) - 1) / 2) * bw for p in range(len(policies))]
        ys = [pol["tenants"][i]["throughput"] for pol in policies]
        ax_tp.bar(xs, ys, bw * 0.95, color=colours(i % 10), label=name)
    top = max([t["throughput"] for pol in policies for t in pol["tenants"]] + [1.0])
    ax_tp.set_ylim(0, top * 1.3)
    for p, pol in enumerate(policies):
        flags = ("EF " if pol["envy_free"] else "") + ("SI " if pol["sharing_incentive"] else "")
        flags += "PE" if pol["pareto"]["efficient"] else ""
        ax_tp.text(p, ax_tp.get_ylim()[1] * 0.98, f"{pol['total_throughput']:.0f}\n{flags}",
                   ha="center", va="top", fontsize=7)
    ax_tp.set_xticks(range(len(policies)))
    ax_tp.set_xticklabels([pol["policy"] for pol in policies], rotation=30, ha="right")
    ax_tp.set_ylabel("samples/s")
    ax_tp.set_title("throughput per tenant (total, properties on top)")
    title = "Multi-tenant shares"
    if rep.get("emulated"):
        title += " (EMULATED device speeds)"
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
