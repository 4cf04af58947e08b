#!/usr/bin/env python3
"""Draws a small training set and held-out rows, disjoint, from one set's TRAINING file.

The validation logs of apps/DEFAULTS.md ("The gate", "The decay's floor on small sets") measure
the defaults on such sets, so that no choice sees a test file: the training file's rows are
shuffled with --seed, the first --rows become train.txt and the next --held test.txt (the rows
`hetsgd train --test` reports on). Labels: the --labels most frequent among the drawn training
rows that at least two of them hold, renumbered in their old order; a row left without a label
(or without a feature) is dropped, so each file may hold a few rows fewer than asked. Features
keep their ids and values. Both files are in Extreme Classification Repository text format.

Example (tags seed 1 of "The gate"):
  /usr/bin/python3 tools/make_debian_tags.py --out=/tmp/xdata/debian-tags
  /usr/bin/python3 tools/draw_heldout.py --set=/tmp/xdata/debian-tags --rows=1200 \\
      --held=1500 --labels=60 --seed=1 --out=/tmp/xsmall/tags-s1
  hetsgd train --train=/tmp/xsmall/tags-s1/train.txt --test=/tmp/xsmall/tags-s1/test.txt
"""

import argparse
import collections
import os
import random
import sys


def read_rows(path):
    """The header's feature count and each row as (label ids, the feature text as written)."""
    with open(path) as f:
        header = f.readline().split()
        if len(header) != 3 or not all(h.isdigit() for h in header):
            sys.exit(f"draw_heldout: {path}:1: expected the header 'rows features labels', "
                     f"got {' '.join(header)!r}")
        rows = []
        for number, line in enumerate(f, start=2):
            line = line.rstrip("\n")
            labels, _, features = line.partition(" ")
            if ":" in labels:  # no labels: the line starts with a feature
                labels, features = "", line
            try:
                rows.append(([int(x) for x in labels.split(",") if x], features.strip()))
            except ValueError:
                sys.exit(f"draw_heldout: {path}:{number}: bad label list {labels!r}")
    return int(header[1]), rows


def write_rows(path, rows, features, label_id):
    lines = []
    for labels, text in rows:
        ids = sorted(label_id[x] for x in labels if x in label_id)
        if ids and text:
            lines.append(",".join(map(str, ids)) + " " + text)
    with open(path, "w") as f:
        f.write(f"{len(lines)} {features} {len(label_id)}\n")
        f.writelines(line + "\n" for line in lines)
    return len(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", required=True, help="folder holding the set's train.txt")
    ap.add_argument("--out", required=True, help="folder for train.txt and test.txt")
    ap.add_argument("--rows", type=int, required=True, help="training rows to draw")
    ap.add_argument("--held", type=int, required=True, help="held-out rows to draw after them")
    ap.add_argument("--labels", type=int, required=True, help="most frequent labels to keep")
    ap.add_argument("--seed", type=int, default=1, help="seed of the shuffle")
    a = ap.parse_args()
    if a.rows < 1 or a.held < 1 or a.labels < 1:
        ap.error("--rows, --held and --labels must be at least 1")
    features, rows = read_rows(os.path.join(a.set, "train.txt"))
    if a.rows + a.held > len(rows):
        sys.exit(f"draw_heldout: {a.set}/train.txt has {len(rows)} rows, fewer than "
                 f"--rows + --held = {a.rows + a.held}")
    random.Random(a.seed).shuffle(rows)
    train, held = rows[:a.rows], rows[a.rows:a.rows + a.held]
    count = collections.Counter(x for labels, _ in train for x in labels)
    kept = sorted(x for x, c in count.most_common(a.labels) if c >= 2)
    label_id = {x: i for i, x in enumerate(kept)}
    os.makedirs(a.out, exist_ok=True)
    n_train = write_rows(os.path.join(a.out, "train.txt"), train, features, label_id)
    n_held = write_rows(os.path.join(a.out, "test.txt"), held, features, label_id)
    print(f"{a.out}: {n_train} training rows, {n_held} held-out rows, {features} features, "
          f"{len(kept)} labels")


if __name__ == "__main__":
    main()
