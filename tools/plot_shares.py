#!/usr/bin/env python3
"""Draws the JSON report of `hetsgd share --json` (or its enforcement.json) as a PNG.

Report: left, for each policy, one stacked bar per device type showing the fraction of that type
each tenant holds (the unassigned part is left blank); right, each tenant's absolute throughput
(samples/s) per policy. Enforcement (a file with "round_log"): one panel per device type, each
tenant's realised share after every round (solid) against its average target (dashed), with
the one-device-round band 1/(c_j N) around the target, and a marker where a tenant's job
finished (o) or failed (x). Emulated numbers are labelled as such.

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
        if "round_log" in rep:
            return plot_enforcement(rep, args.output)
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


def plot_enforcement(run, output):
    """Realised share against the average target per round, one panel per device type."""
    types, counts = run["types"], run["counts"]
    names = [t["name"] for t in run["tenants"]]
    colours = plt.get_cmap("tab10")
    fig, axes = plt.subplots(1, len(types), figsize=(5 * len(types), 4), squeeze=False)
    for j, typ in enumerate(types):
        ax = axes[0][j]
        for i, name in enumerate(names):
            rounds, real, target, band = [], [], [], []
            present = 0
            for rec in run["round_log"]:
                if i not in rec["present"]:
                    continue
                present += 1
                rounds.append(rec["round"])
                real.append(rec["realised"][i][j])
                target.append(rec["average_target"][i][j])
                band.append(1.0 / (counts[j] * present))
            if not rounds:
                continue
            colour = colours(i % 10)
            ax.plot(rounds, real, "-", color=colour, label=f"{name} realised")
            ax.plot(rounds, target, "--", color=colour, label=f"{name} target")
            ax.fill_between(rounds, [t - b for t, b in zip(target, band)],
                            [t + b for t, b in zip(target, band)], color=colour, alpha=0.12)
            # A job that finished or failed leaves the share: mark the round it ended in.
            tenant = run["tenants"][i]
            for key, marker in (("finished_round", "o"), ("failed_round", "x")):
                end = tenant.get(key, -1)
                if end is not None and end >= 0 and end in rounds:
                    k = rounds.index(end)
                    ax.plot([end], [real[k]], marker, color=colour, markersize=8,
                            label=f"{name} {key.split('_')[0]}")
        ax.set_title(f"{typ} ({counts[j]} devices)")
        ax.set_xlabel("round")
        ax.set_ylabel("share of the type")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=7)
    title = f"Enforcement of {run['policy']}: realised vs target (band: one device-round)"
    if run.get("emulated"):
        title += " (EMULATED device speeds)"
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
