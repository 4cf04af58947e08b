"""Helpers shared by tools/bench_xmc.py and tools/bench_peer.py: hetsgd's command line with the
bench flags, `hetsgd data gen`, the table cells and the machine note. bench_xmc imports
bench_peer, and both import this module (one way: bench_xmc -> bench_peer -> bench_common)."""

import math
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import bench_cpu  # noqa: E402  (the PyTorch baseline's path)

BASELINE = bench_cpu.BASELINE
FAILED = "failed"

# --------------------------------------------------------------------------------------------
# hetsgd's command line: which flags it has, and their defaults

_HELP = {}


def train_help(hetsgd):
    if hetsgd not in _HELP:
        try:
            out = subprocess.run([hetsgd, "train", "--help"], capture_output=True, text=True)
            _HELP[hetsgd] = out.stdout + out.stderr
        except OSError:
            _HELP[hetsgd] = ""
    return _HELP[hetsgd]


def supports(hetsgd, flag):
    """`flag` is one of `hetsgd train`'s options (an exact name, not a prefix of another)."""
    text = train_help(hetsgd)
    if not text:  # no help at all: pass every flag and let the run fail with its own message
        return True
    return re.search(r"(^|[\s,])" + re.escape(flag) + r"($|[\s,={])", text, re.M) is not None


def help_default(hetsgd, flag, fallback):
    """The default `train --help` shows for `flag` (the `=VALUE` at the end of its line)."""
    for line in train_help(hetsgd).splitlines():
        names = line.strip().split(" ")[0].split(",")
        if flag in names:
            m = re.search(r"=([0-9.eE+-]+)\s*$", line)
            if m:
                try:
                    return float(m.group(1))
                except ValueError:
                    pass
    return fallback


# Every flag hetsgd_cmd left out, for the report (one set, filled by every part).
MISSING_FLAGS = set()


def hetsgd_cmd(args, options):
    """`hetsgd train` with `options` ((flag, value or None) pairs), leaving out (and noting)
    any flag this build does not have."""
    cmd = [args.hetsgd, "train"]
    for flag, value in options:
        if flag not in ("--train", "--test") and not supports(args.hetsgd, flag):
            MISSING_FLAGS.add(flag)
            continue
        cmd.append(flag if value is None else f"{flag}={value}")
    return cmd


def bench_flags(args, output_layer):
    """The bench flags: hidden --hidden, Adam lr 1e-3 held constant, no dropout, no validation
    split, one evaluation at the end (in-training evaluations on the first 2000 test rows)."""
    return [("--hidden", str(args.hidden)), ("--optimizer", "adam"), ("--lr", "1e-3"),
            ("--lr-scaling", "none"), ("--warmup-epochs", "0"), ("--lambda", "0"),
            ("--dropout", "0"), ("--eval-every", "1000000000"),
            ("--no-eval-at-start", None), ("--eval-max-points", "2000"),
            ("--val-fraction", "0"), ("--seed", str(args.seed)),
            ("--output-layer", output_layer), ("--json", None)]


# --------------------------------------------------------------------------------------------
# Data


def generate(args, preset, scale, prefix, fmt):
    """`hetsgd data gen`; returns {train, test, rows, test_rows, features, labels, gen_s,
    gen_rss_mb} (the last two: its wall time and peak RSS) or None."""
    cmd = [args.hetsgd, "data", "gen", f"--preset={preset}", f"--scale={scale}",
           f"--seed={args.seed}", f"--format={fmt}", "-o", prefix]
    if args.verbose:
        print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    print(f"  generating {preset} x{scale} ({fmt}) ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryFile("w+") as so, tempfile.NamedTemporaryFile("r") as rss:
            proc = subprocess.Popen(bench_cpu.peak_rss_command(cmd, rss.name), stdout=so,
                                    stderr=subprocess.STDOUT, text=True)
            _, status, usage = os.wait4(proc.pid, 0)
            peak_mb = bench_cpu.read_peak_rss(rss.name, usage)  # this child's own peak RSS
            so.seek(0)
            text = so.read()
    except OSError as e:
        print(f"  data gen {preset}: FAILED: {e}", file=sys.stderr)
        return None
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        print(f"  data gen {preset}: FAILED ({code}): {' '.join(cmd)}\n{text[-2000:]}",
              file=sys.stderr)
        return None
    ext = "bin" if fmt == "cache" else "txt"
    info = {"train": f"{prefix}_train.{ext}", "test": f"{prefix}_test.{ext}",
            "gen_s": time.perf_counter() - t0, "gen_rss_mb": peak_mb}
    m = re.search(r"_train\.\w+: (\d+) rows", text)
    info["rows"] = int(m.group(1)) if m else None
    m = re.search(r"_test\.\w+: (\d+) rows", text)
    info["test_rows"] = int(m.group(1)) if m else None
    m = re.search(r"\((\d+) features, (\d+) labels\)", text)
    info["features"], info["labels"] = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    if info["rows"] is None or info["labels"] is None:  # ask `data stats` instead
        st = subprocess.run([args.hetsgd, "data", "stats", info["train"]], capture_output=True,
                            text=True).stdout
        for key, field in (("rows", "rows"), ("features", "num_features"),
                           ("labels", "num_labels")):
            m = re.search(rf"^{field}:\s+(\d+)", st, re.M)
            if m and info[key] is None:
                info[key] = int(m.group(1))
    if not (os.path.exists(info["train"]) and os.path.exists(info["test"])):
        print(f"  data gen {preset}: expected {info['train']} and {info['test']}",
              file=sys.stderr)
        return None
    return info


# --------------------------------------------------------------------------------------------
# Formatting


def num(v, spec):
    if v is None:
        return "n/a"
    if isinstance(v, float) and math.isnan(v):
        return "n/a"
    return format(v, spec)


def cell(rec, v, spec):
    """A table cell: "failed" when the run failed, "n/a" when the value is missing."""
    return FAILED if rec is None else num(v, spec)


def ratio(a, b):
    if a is None or b is None or not b:
        return None
    return a / b


def get(rec, key):
    if rec is None:
        return None
    v = rec.get(key)
    return float(v) if isinstance(v, (int, float)) else None


def machine_note(args):
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return (f"Machine: {os.cpu_count()} logical cores ({usable} usable by this process), "
            f"{model}; load average at the start {load} (other jobs may share the cores, so "
            f"read the ratios rather than the absolute rates); {args.threads} threads for the "
            f"one-worker runs.")
