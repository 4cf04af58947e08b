#!/usr/bin/env python3
"""Builds debian-tags, a real multi-label set, from this machine's Debian package index.

Rows: the binary packages whose index entry carries a `Tag:` field (debtags). Labels: their
tags (e.g. `role::program`, `implemented-in::c`), kept when at least two packages carry them.
Features: the words ([a-z][a-z0-9+]{1,30}, lower-cased) of the package's name (split at - and
.), its short description and its section, kept when at least two packages hold them; value
(1 + ln tf) * ln(N / df), each row L2-normalised. Rows left without a label or a word are
dropped. Split: a package is a test row when the first hex digit of md5(its name) is 0-3.
Output: train.txt and test.txt in Extreme Classification Repository text format (0-based ids)
under --out, beside labels.txt and features.txt (line i names id i).

On Debian 12 main, amd64 (the index `apt-get update` leaves in /var/lib/apt/lists): 22,712
training rows, 7,591 test rows, 11,941 features, 581 labels, 3.69 labels a row.

With --labels=used-by the labels are instead the packages that name the row's package in
their Depends, Recommends or Suggests (the first of each alternative; debian-deps turned the
other way round): on the same index 30,403 training rows, 10,187 test rows, 14,684 features,
43,849 labels, 6.9 labels a row, most labels on 2 or 3 rows. Further label spaces of the same
rows (apps/DEFAULTS.md draws small sets from them):
  --labels=depends  the packages the row's package depends on, directly or not (Depends and
                    Pre-Depends, the first of each alternative, followed to the end): 41,830 /
                    13,857 rows, 24,038 labels, 61.6 labels a row
  --labels=section  the package's section without its archive area (`contrib/net` -> `net`),
                    one label a row, the section's words left out of the features: 47,614 /
                    15,825 rows, 58 labels
  --labels=suggests the first of each alternative of its Suggests field: 5,143 / 1,711 rows,
                    3,166 labels

Example:
  /usr/bin/python3 tools/make_debian_tags.py --out=/tmp/xdata/debian-tags
  /usr/bin/python3 tools/make_debian_tags.py --labels=used-by --out=/tmp/xdata/debian-used-by
  /usr/bin/python3 tools/bench_real.py --data-root=/tmp/xdata --datasets=debian-tags
"""

import argparse
import collections
import glob
import hashlib
import math
import os
import re
import subprocess
import sys

WORD = re.compile(r"[a-z][a-z0-9+]{1,30}")


def read_index(path):
    """The package index's stanzas as dicts (continuation lines joined with a space)."""
    cat = ["lz4cat", path] if path.endswith(".lz4") else ["cat", path]
    text = subprocess.run(cat, capture_output=True, text=True, check=True).stdout
    stanzas = []
    for block in text.split("\n\n"):
        fields, key = {}, None
        for line in block.split("\n"):
            if not line:
                continue
            if line[0] in " \t" and key is not None:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if "Package" in fields:
            stanzas.append(fields)
    return stanzas


def words(p, section=True):
    text = " ".join(re.split(r"[-.]", p["Package"])) + " " + p.get("Description", "") + " "
    return WORD.findall((text + (p.get("Section", "") if section else "")).lower())


def tags(p):
    return sorted({t.strip() for t in p.get("Tag", "").split(",") if t.strip()})


RELATIONS = ("Depends", "Recommends", "Suggests")


def named(p, fields):
    """The package names p's relation `fields` name (the first of each alternative)."""
    names = set()
    for field in fields:
        for alt in p.get(field, "").split(","):
            name = alt.strip().split("|")[0].strip().split(" ")[0].split(":")[0]
            if name:
                names.add(name)
    return names


def used_by(stanzas):
    """Package name -> the sorted names of the packages whose RELATIONS name it."""
    users = collections.defaultdict(set)
    for p in stanzas:
        for name in named(p, RELATIONS):
            users[name].add(p["Package"])
    return {name: sorted(s) for name, s in users.items()}


def depends_closure(stanzas):
    """Package name -> the sorted names of every package it depends on, directly or not."""
    deps = {p["Package"]: named(p, ("Depends", "Pre-Depends")) for p in stanzas}
    closure = {}
    for start in deps:
        seen, todo = set(), list(deps[start])
        while todo:
            name = todo.pop()
            if name in seen or name == start:
                continue
            seen.add(name)
            todo.extend(deps.get(name, ()))
        closure[start] = sorted(seen)
    return closure


def label_function(kind, stanzas):
    """The row's labels for --labels=kind: a function of a stanza."""
    if kind == "tags":
        return tags
    if kind == "section":
        return lambda p: [p["Section"].split("/")[-1]] if p.get("Section") else []
    if kind == "suggests":
        return lambda p: sorted(named(p, ("Suggests",)))
    table = used_by(stanzas) if kind == "used-by" else depends_closure(stanzas)
    return lambda p: table.get(p["Package"], [])


def write_set(rows, out):
    label_count = collections.Counter(t for _, ts, _ in rows for t in ts)
    word_count = collections.Counter(w for _, _, ws in rows for w in set(ws))
    labels = sorted(t for t, c in label_count.items() if c >= 2)
    features = sorted(w for w, c in word_count.items() if c >= 2)
    label_id = {t: i for i, t in enumerate(labels)}
    feature_id = {w: i for i, w in enumerate(features)}
    n = len(rows)
    split = {"train": [], "test": []}
    for name, ts, ws in rows:
        ls = sorted(label_id[t] for t in ts if t in label_id)
        tf = collections.Counter(w for w in ws if w in feature_id)
        if not ls or not tf:
            continue
        v = {feature_id[w]: (1 + math.log(c)) * math.log(n / word_count[w]) for w, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values()))
        line = ",".join(map(str, ls)) + " " + " ".join(
            f"{k}:{x / norm:.6f}" for k, x in sorted(v.items()))
        which = "test" if hashlib.md5(name.encode()).hexdigest()[0] in "0123" else "train"
        split[which].append(line)
    os.makedirs(out, exist_ok=True)
    for which, lines in split.items():
        with open(os.path.join(out, which + ".txt"), "w") as f:
            f.write(f"{len(lines)} {len(features)} {len(labels)}\n")
            f.writelines(line + "\n" for line in lines)
    for name, ids in (("labels.txt", labels), ("features.txt", features)):
        with open(os.path.join(out, name), "w") as f:
            f.writelines(x + "\n" for x in ids)
    return len(split["train"]), len(split["test"]), len(features), len(labels)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the set (outside the repository)")
    ap.add_argument("--index", default=None,
                    help="a Packages file (.lz4 or plain); default: the main amd64 index of "
                         "/var/lib/apt/lists")
    ap.add_argument("--labels", choices=("tags", "used-by", "depends", "section", "suggests"),
                    default="tags",
                    help="tags: the package's debtags; used-by: the packages that depend on, "
                         "recommend or suggest it; depends: those it depends on, directly or "
                         "not; section: its section; suggests: those it suggests")
    a = ap.parse_args()
    index = a.index
    if index is None:
        found = sorted(glob.glob("/var/lib/apt/lists/*_debian_dists_*_main_binary-amd64_Packages*"))
        found = [f for f in found if "-updates" not in f and "-security" not in f]
        if not found:
            sys.exit("make_debian_tags: no package index in /var/lib/apt/lists "
                     "(run apt-get update, or give --index)")
        index = found[0]
    stanzas = read_index(index)
    label_of = label_function(a.labels, stanzas)
    rows = [(p["Package"], label_of(p), words(p, a.labels != "section")) for p in stanzas]
    rows = [r for r in rows if r[1] and r[2]]
    train, test, d, labels = write_set(rows, a.out)
    name = "debian-" + a.labels
    print(f"{name} from {index}: {train} training rows, {test} test rows, "
          f"{d} features, {labels} labels -> {a.out}")


if __name__ == "__main__":
    main()
