#!/usr/bin/env python3
"""Extreme-label benchmark: hetsgd's shortlist against its full softmax and against PyTorch.

Measures the shortlisted output layer against the full softmax and the PyTorch baseline at the
Amazon-670K shape (speed, memory, worker scaling), the accuracy the shortlist costs, the
shortlist against a PyTorch sampled softmax at equal epochs (part "peer"), and the shortlist's
speed and memory as the label count grows to 2.8M (part "labels"). Parts "peer" and "labels"
live in tools/bench_peer.py, whose docstring describes them.

Part "scale" (--parts=scale). The data is SYNTHETIC: `hetsgd data gen --preset=amazon-670k`
writes rows with Amazon-670K's shape (135,909 features, 670,091 labels; 490,449 training rows
at --amazon-scale=1), not the real data set. Every table says so. The model is
sparse -> 128 (ReLU) -> 670,091, softmax loss, Adam lr 1e-3, batch 256, a constant learning rate
(no warm-up, no decay), no dropout, no validation split, and one evaluation at the end on the
first 2000 test rows. Runs, one after the other:
  a. hetsgd --output-layer=shortlist (its default shortlist options: positives, 10 HNSW hard
     negatives per row, 1024 sampled negatives) for ONE full epoch on one CPU worker with
     --threads threads: process wall time, training time and samples/s (from hetsgd's --json),
     peak RSS, P@1.
  b. hetsgd --output-layer=full (every label scored, in chunks) for --full-seconds of training:
     samples/s and peak RSS. Its epoch time is extrapolated: training rows / samples/s.
  c. the PyTorch baseline (tools/pytorch_baseline.py: EmbeddingBag + SparseAdam, nn.Linear +
     Adam, a full softmax; the same model, starting from hetsgd's initial weights) with the same
     threads for --full-seconds. It trains on a small XC-text copy of the same shape
     (--torch-scale, default 0.01 of the rows, same features and labels), so it does not parse
     a 490k-row text file: its cost per sample does not depend on the number of rows (a step is
     one batch of 256 rows against all 670,091 labels; only the once-per-epoch permutation
     grows with the rows). Its epoch time is extrapolated to the rows of run a.
  d. worker scaling, each --scaling-seconds with the shortlist: one worker with 1 thread and
     batch 256; one worker with 2 threads and batch 256; two workers (cpu:0,cpu:1) with 1
     thread each: --algo=adaptive with batch 256 each (each worker trains as the one worker
     does; model averaging keeps per-replica batches) and with batch 128 each, and
     --algo=sync with batch 128 each (global 256, the one worker's batch, as DDP would).
     Reported: samples/s, its ratio to the 1-worker/1-thread run and to the 1-worker/2-thread
     run, the merge time, the last round's size S (--merge-budget grows it), and the peak RSS
     per replica (the process's peak / workers). --no-scaling skips it.
Peak RSS is each process's own ru_maxrss (os.wait4), so it includes the loaded data (the whole
cache for hetsgd, the small copy for PyTorch). "dense GFLOP/s" is 6 * hidden * L FLOP per
sample (forward H W1, dW1 = H^T dZ, dH = dZ W1^T over all L labels) times samples/s: for the
shortlist this is the full layer's work it avoids, an equivalent rate and not what its kernels
ran. It is set against the OpenBLAS sgemm peak (2048^3, --threads threads) measured here with
tools/bench_cpu.py's helper, which also chooses OPENBLAS_CORETYPE for every process.

Part "accuracy" (--parts=accuracy). Shortlist against full softmax at equal epochs, on
wiki10-31k-shaped and eurlex-4k-shaped SYNTHETIC data (`data gen`, --wiki10-scale and
--eurlex-scale of the preset's rows) and on the real delicious (--datasets-dir/delicious/
train.txt and test.txt; skipped with a message when absent). Each case is trained twice with
the CLI's defaults (hidden 512, dropout 0.5, lr, batch, validation split and keep-best) for
--acc-epochs epochs, once --output-layer=full and once --output-layer=shortlist, evaluating
--acc-evals-per-epoch times per epoch (--eval-every in rounds, computed from hetsgd's round
size) and writing the curve with --log. Reported: the final test P@1/3/5 of hetsgd's --json
(the model keep-best selects on validation, when selection is on; the table header says
which), the P@1 difference in points, each run's training seconds (from the --log curve) to
first reach the full softmax's final test P@1 ("not reached" otherwise), and each run's total
training time.

The PyTorch runs use --python, by default this interpreter when it has torch, else
/usr/bin/python3 (Debian's python3-torch).

Examples:
  nice -n 19 /usr/bin/python3 tools/bench_xmc.py --threads=2 --json-out=xmc.json
  tools/bench_xmc.py --parts=peer --peer-scale=1 --peer-epochs=1
  tools/bench_xmc.py --parts=labels --labels-rows=50000 --labels-seconds=60
  tools/bench_xmc.py --parts=scale --amazon-scale=0.002 --full-seconds=5 --scaling-seconds=5
  tools/bench_xmc.py --parts=accuracy --wiki10-scale=0.05 --eurlex-scale=0.05 --acc-epochs=1
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_cpu  # noqa: E402  (OpenBLAS core choice, sgemm peak, the wait4 runner)
import bench_peer  # noqa: E402  (parts "peer" and "labels")
from bench_common import (BASELINE, FAILED, MISSING_FLAGS, REPO, bench_flags,  # noqa: E402
                          cell, generate, get, help_default, hetsgd_cmd, machine_note, num,
                          ratio)

SKIPPED = object()  # a run left out on purpose (--no-torch)

# --------------------------------------------------------------------------------------------
# hetsgd's runs


def run_record(cmd, env, what):
    """Runs `cmd` through bench_cpu.run_json (the JSON record plus _wall_s and _peak_rss_mb from
    wait4); on failure prints the reason (with the stderr tail) and returns None."""
    print(f"  {what} ...", file=sys.stderr, flush=True)
    try:
        rec = bench_cpu.run_json(cmd, env, what)
    except Exception as e:  # noqa: BLE001  (a failed run is reported, the others continue)
        print(f"  {what}: FAILED: {e}", file=sys.stderr, flush=True)
        return None
    sps = rec.get("samples_per_s")
    print(f"  {what}: {num(rec.get('train_time_s'), '.1f')} s training, "
          f"{num(sps, '.0f')} samples/s, peak RSS {num(rec.get('_peak_rss_mb'), '.0f')} MB, "
          f"wall {rec['_wall_s']:.1f} s", file=sys.stderr, flush=True)
    return rec


# --------------------------------------------------------------------------------------------
# Data


def xc_header(path):
    with open(path) as f:
        rows, feats, labels = (int(v) for v in f.readline().split()[:3])
    return rows, feats, labels


# --------------------------------------------------------------------------------------------
# Part "scale"


def part_scale(args, env, work, peak, out):
    print("[scale] Amazon-670K-shaped synthetic data", file=sys.stderr, flush=True)
    big = generate(args, "amazon-670k", args.amazon_scale, os.path.join(work, "amz"), "cache")
    small = None
    if not args.no_torch:
        small = generate(args, "amazon-670k", args.torch_scale, os.path.join(work, "amz_xc"),
                         "xc")
    rows = big["rows"] if big else None
    labels = (big or small or {}).get("labels") or 670091
    features = (big or small or {}).get("features")
    dense_flop_per_sample = 6.0 * args.hidden * labels

    def common(output_layer):
        return bench_flags(args, output_layer)

    def data_opts():
        return [("--train", big["train"]), ("--test", big["test"])]

    res = {"rows": rows, "features": features, "labels": labels, "amazon_scale": args.amazon_scale,
           "torch_scale": args.torch_scale, "torch_rows": small["rows"] if small else None}
    t = args.threads
    # a. shortlist, one full epoch
    if big:
        cmd = hetsgd_cmd(args, data_opts() + [("--devices", "cpu:0"), ("--threads", str(t)),
                                              ("--batch", "256"), ("--epochs", "1")]
                         + common("shortlist"))
        res["shortlist"] = run_record(cmd, env, f"a. hetsgd shortlist, 1 epoch, {t} threads")
    else:
        res["shortlist"] = None
    # b. full softmax, time budget
    if big:
        cmd = hetsgd_cmd(args, data_opts() + [("--devices", "cpu:0"), ("--threads", str(t)),
                                              ("--batch", "256"), ("--epochs", "0"),
                                              ("--time-budget", str(args.full_seconds))]
                         + common("full"))
        res["full"] = run_record(cmd, env, f"b. hetsgd full softmax, {args.full_seconds} s, "
                                           f"{t} threads")
    else:
        res["full"] = None
    # c. PyTorch baseline, full softmax, time budget, on the small XC copy
    res["pytorch"] = None
    if small:
        cmd = [args.python, BASELINE, f"--train={small['train']}", f"--test={small['test']}",
               f"--hidden={args.hidden}", "--optimizer=adam", "--lr=1e-3", "--batch=256",
               "--epochs=1000000", f"--threads={t}", f"--seed={args.seed}", "--loss=softmax",
               "--init=hetsgd", f"--max-seconds={args.full_seconds}",
               f"--eval-max-points={args.torch_eval_points}", "--json", "--quiet",
               # This part's table in RESULTS.md was measured with SparseAdam.
               "--sparse-optimizer=sparse-adam"]
        if args.torch_max_rows > 0:
            cmd.append(f"--max-rows={args.torch_max_rows}")
        tenv = dict(env, OPENBLAS_NUM_THREADS=str(t), OMP_NUM_THREADS=str(t))
        if args.torch_omp_wait != "default":
            tenv["OMP_WAIT_POLICY"] = args.torch_omp_wait.upper()
        res["pytorch"] = run_record(cmd, tenv, f"c. PyTorch full softmax, {args.full_seconds} s,"
                                               f" {t} threads")
    # d. worker scaling
    res["scaling"] = []
    if not args.no_scaling and big:
        configs = [("1 worker x 1 thread", "cpu:0", 1, 256, None, 1),
                   ("1 worker x 2 threads", "cpu:0", 2, 256, None, 1),
                   ("2 workers x 1 thread, adaptive", "cpu:0,cpu:1", 1, 256, "adaptive", 2),
                   ("2 workers x 1 thread, adaptive", "cpu:0,cpu:1", 1, 128, "adaptive", 2),
                   ("2 workers x 1 thread, sync", "cpu:0,cpu:1", 1, 128, "sync", 2)]
        for name, devices, threads, batch, algo, workers in configs:
            opts = data_opts() + [("--devices", devices), ("--threads", str(threads)),
                                  ("--batch", str(batch)), ("--epochs", "0"),
                                  ("--time-budget", str(args.scaling_seconds))]
            if algo:
                opts.append(("--algo", algo))
            rec = run_record(hetsgd_cmd(args, opts + common("shortlist")), env,
                             f"d. shortlist, {name}, {args.scaling_seconds} s")
            res["scaling"].append({"name": name, "devices": devices, "threads": threads,
                                   "batch": batch, "algo": algo or "-", "workers": workers,
                                   "record": rec})
    out["scale"] = res
    return report_scale(args, res, peak, dense_flop_per_sample)


def report_scale(args, res, peak, dense_flop_per_sample):
    lines = []
    rows, labels = res["rows"], res["labels"]
    shape = (f"Amazon-670K-shaped SYNTHETIC data (hetsgd data gen --preset=amazon-670k "
             f"--scale={args.amazon_scale}: {num(rows, 'd')} training rows, "
             f"{num(res['features'], 'd')} features, {labels} labels; not the real data set)")
    lines.append(f"### Output layer at 670K labels, one worker, {args.threads} threads on a "
                 f"{os.cpu_count()}-core machine: {shape}")
    lines.append("")
    torch_note = ("PyTorch skipped (--no-torch)." if args.no_torch else
                  f"PyTorch trains on a {args.torch_scale} copy of the same shape "
                  f"({num(res['torch_rows'], 'd')} rows); its per-sample cost does not depend "
                  f"on the row count, and its epoch time is extrapolated to {num(rows, 'd')} "
                  f"rows.")
    lines.append(f"Model sparse -> {args.hidden} -> {labels}, softmax, Adam lr 1e-3, batch 256, "
                 f"{args.threads} threads. {torch_note} P@1 on the first 2000 test rows "
                 f"(hetsgd) / {args.torch_eval_points} (PyTorch), after little training: a "
                 f"sanity check, not accuracy. Full-softmax runs: {args.full_seconds:g} s of "
                 f"training each.")
    lines.append("")
    lines.append("| run | training | rows trained | training s | process wall s | samples/s "
                 "| epoch s | peak RSS MB | P@1 | dense GFLOP/s (% of sgemm peak) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")

    def gflops(rec, equivalent):
        sps = get(rec, "samples_per_s")
        if sps is None:
            return cell(rec, None, "")
        g = sps * dense_flop_per_sample / 1e9
        notes = ([f"{100 * g / peak:.0f}%"] if peak else []) + (["equivalent"] if equivalent
                                                               else [])
        return f"{g:.1f}" + (f" ({', '.join(notes)})" if notes else "")

    def epoch_cell(rec, measured):
        if rec is None:
            return FAILED
        if measured:
            return f"{num(get(rec, 'train_time_s'), '.1f')} (measured)"
        sps = get(rec, "samples_per_s")
        if not sps or not rows:
            return "n/a"
        e = rows / sps
        return f"{e:.0f} (extrapolated)" if e >= 100 else f"{e:.1f} (extrapolated)"

    runs = [("hetsgd shortlist", "1 epoch", res["shortlist"], True),
            ("hetsgd full softmax", f"{args.full_seconds} s budget", res["full"], False),
            ("PyTorch full softmax", f"{args.full_seconds} s budget", res["pytorch"], False)]
    for name, how, rec, measured in runs:
        if name.startswith("PyTorch") and args.no_torch:
            continue
        lines.append(f"| {name} | {how} | {cell(rec, get(rec, 'samples'), '.0f')} | "
                     f"{cell(rec, get(rec, 'train_time_s'), '.1f')} | "
                     f"{cell(rec, get(rec, '_wall_s'), '.1f')} | "
                     f"{cell(rec, get(rec, 'samples_per_s'), '.0f')} | "
                     f"{epoch_cell(rec, measured)} | "
                     f"{cell(rec, get(rec, '_peak_rss_mb'), '.0f')} | "
                     f"{cell(rec, get(rec, 'p1'), '.4f')} | {gflops(rec, measured)} |")
    lines.append("")
    s, f, p = (get(res[k], "samples_per_s") for k in ("shortlist", "full", "pytorch"))

    def rcell(a, b, ra, rb):
        if ra is SKIPPED or rb is SKIPPED:
            return "skipped"
        if ra is None or rb is None:
            return FAILED
        return num(ratio(a, b), ".1f") + ("x" if ratio(a, b) is not None else "")

    lines.append(f"Samples/s side by side ({shape}; {args.threads} threads):")
    lines.append("")
    lines.append("| shortlist samples/s | full samples/s | PyTorch samples/s | shortlist / full "
                 "| shortlist / PyTorch | full / PyTorch | peak RSS MB shortlist / full / "
                 "PyTorch |")
    lines.append("|---|---|---|---|---|---|---|")
    sr, fr, pr = res["shortlist"], res["full"], res["pytorch"]
    if args.no_torch:
        pr = SKIPPED
    pcell = (lambda v, spec: "skipped") if args.no_torch else (lambda v, spec: cell(pr, v, spec))
    lines.append(f"| {cell(sr, s, '.0f')} | {cell(fr, f, '.0f')} | {pcell(p, '.0f')} | "
                 f"{rcell(s, f, sr, fr)} | {rcell(s, p, sr, pr)} | {rcell(f, p, fr, pr)} | "
                 f"{cell(sr, get(sr, '_peak_rss_mb'), '.0f')} / "
                 f"{cell(fr, get(fr, '_peak_rss_mb'), '.0f')} / "
                 f"{pcell(get(res['pytorch'], '_peak_rss_mb'), '.0f')} |")
    if res["scaling"]:
        lines.append("")
        lines.append(f"### Worker scaling with the shortlist, {args.scaling_seconds:g} s each, "
                     f"on a {os.cpu_count()}-core machine: {shape}")
        lines.append("")
        base1 = get(res["scaling"][0]["record"], "samples_per_s")
        base2 = get(res["scaling"][1]["record"], "samples_per_s")
        lines.append("| configuration | devices | threads / worker | batch / worker | algo "
                     "| training s | rows trained | samples/s | / 1 worker x 1 thread "
                     "| / 1 worker x 2 threads | merge s | S (last round) | peak RSS MB "
                     "| peak RSS per replica MB | P@1 |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for sc in res["scaling"]:
            rec = sc["record"]
            sps = get(rec, "samples_per_s")
            rss = get(rec, "_peak_rss_mb")
            r1 = (rcell(sps, base1, rec, res["scaling"][0]["record"]))
            r2 = (rcell(sps, base2, rec, res["scaling"][1]["record"]))
            lines.append(f"| {sc['name']} | {sc['devices']} | {sc['threads']} | {sc['batch']} "
                         f"| {sc['algo']} | {cell(rec, get(rec, 'train_time_s'), '.1f')} | "
                         f"{cell(rec, get(rec, 'samples'), '.0f')} | {cell(rec, sps, '.0f')} | "
                         f"{r1} | {r2} | {cell(rec, get(rec, 'merge_time_s'), '.1f')} | "
                         f"{cell(rec, get(rec, 'round_samples'), '.0f')} | {cell(rec, rss, '.0f')} | "
                         f"{cell(rec, rss / sc['workers'] if rss else None, '.0f')} | "
                         f"{cell(rec, get(rec, 'p1'), '.4f')} |")
    return lines


# --------------------------------------------------------------------------------------------
# Part "accuracy"


def read_log(path):
    curve = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    # The curve only: the last record is the saved model's ("record": "final").
                    if record.get("record") != "final":
                        curve.append(record)
    except OSError:
        pass
    return curve


def time_to(curve, target):
    """Training seconds of the first evaluation whose test P@1 reaches `target`, else None."""
    if target is None:
        return None
    for e in curve:
        p1 = e.get("p1")
        if isinstance(p1, (int, float)) and p1 >= target - 1e-12:
            return float(e.get("time_s", float("nan")))
    return None


def eval_every_for(args, train_rows, evals_per_epoch):
    """--eval-every (rounds) for about `evals_per_epoch` evaluations per epoch on one device:
    hetsgd's automatic round is S = max(N / 16, 8 * b0) points, capped at N, where N is the
    training rows less the validation split (the CLI's defaults)."""
    if not train_rows:
        return 1
    vf = help_default(args.hetsgd, "--val-fraction", 0.1)
    b0 = int(help_default(args.hetsgd, "--batch", 128))
    n = max(1, train_rows - int(round(vf * train_rows)))
    s = max(1, min(max(n // 16, 8 * b0), n))
    return max(1, int((n / s) / max(evals_per_epoch, 1e-9)))


def part_accuracy(args, env, work, out):
    print("[accuracy] shortlist against full softmax at equal epochs", file=sys.stderr,
          flush=True)
    cases = []
    for preset, scale in (("wiki10-31k", args.wiki10_scale), ("eurlex-4k", args.eurlex_scale)):
        if scale <= 0:
            continue
        info = generate(args, preset, scale, os.path.join(work, preset), "cache")
        name = f"{preset}-shaped, SYNTHETIC x{scale}"
        cases.append({"case": name, "synthetic": True, "data": info,
                      "labels": info["labels"] if info else None,
                      "rows": info["rows"] if info else None})
    real = os.path.join(args.datasets_dir, "delicious") if args.datasets_dir else ""
    if real and os.path.exists(os.path.join(real, "train.txt")) and \
            os.path.exists(os.path.join(real, "test.txt")):
        tr, te = os.path.join(real, "train.txt"), os.path.join(real, "test.txt")
        rows, feats, labels = xc_header(tr)
        cases.append({"case": "delicious (real)", "synthetic": False,
                      "data": {"train": tr, "test": te, "rows": rows, "labels": labels,
                               "features": feats}, "labels": labels, "rows": rows})
    else:
        print(f"  skipping delicious: no train.txt and test.txt under "
              f"{real or '(no --datasets-dir)'}", file=sys.stderr)
    results = []
    for c in cases:
        info = c["data"]
        r = {"case": c["case"], "synthetic": c["synthetic"], "labels": c["labels"],
             "rows": c["rows"], "full": None, "shortlist": None, "curves": {}}
        if info is None:
            results.append(r)
            continue
        every = eval_every_for(args, info["rows"], args.acc_evals_per_epoch)
        r["eval_every"] = every
        for layer in ("full", "shortlist"):
            slug = re.sub(r"[^A-Za-z0-9]+", "_", c["case"]).strip("_")
            log = os.path.join(work, f"acc_{slug}_{layer}.jsonl")
            if os.path.exists(log):
                os.remove(log)
            cmd = hetsgd_cmd(args, [("--train", info["train"]), ("--test", info["test"]),
                                    ("--devices", "cpu:0"), ("--threads", str(args.threads)),
                                    ("--epochs", f"{args.acc_epochs:g}"),
                                    ("--eval-every", str(every)), ("--log", log),
                                    ("--output-layer", layer), ("--json", None)])
            r[layer] = run_record(cmd, env, f"{c['case']}: {layer}, {args.acc_epochs:g} epochs")
            r["curves"][layer] = read_log(log) if r[layer] is not None else []
        target = get(r["full"], "p1")
        r["target_p1"] = target
        for layer in ("full", "shortlist"):
            r[f"{layer}_time_to_target_s"] = (time_to(r["curves"][layer], target)
                                             if r[layer] is not None else None)
        results.append(r)
    out["accuracy"] = results
    return report_accuracy(args, results)


def report_accuracy(args, results):
    lines = []
    if not results:
        return lines
    recs = [r[k] for r in results for k in ("full", "shortlist") if r[k] is not None]
    selected = any("val" in rec for rec in recs)
    which = ("keep-best: the model with the best validation P@1+P@3+P@5, validation held out of the "
             "training rows" if selected else "the last model (no validation selection)")
    lines.append(f"### Shortlist against full softmax at {args.acc_epochs:g} epochs "
                 f"(one worker, {args.threads} threads on a {os.cpu_count()}-core machine; "
                 f"CLI defaults otherwise)")
    lines.append("")
    lines.append(f"Test P@k are the final test metrics of hetsgd's --json, i.e. of {which}. "
                 "Time to target: training seconds (from the --log curve, evaluations only "
                 "at the --eval-every points) at which the test P@1 first reaches the full "
                 "softmax's final test P@1. Cases marked SYNTHETIC are `hetsgd data gen` "
                 "presets with that data set's shape, not the real data.")
    lines.append("")
    model = "keep-best model" if selected else "last model"
    lines.append("| case | labels | training rows (before the validation split) | eval every "
                 f"(rounds) | final test P@1 ({model}) full / shortlist | P@3 full / shortlist "
                 "| P@5 full / shortlist | shortlist - full "
                 "P@1 (points) | time to full's final P@1, full / shortlist (s) | training s "
                 "full / shortlist | full / shortlist training time | selected round / "
                 "rounds, full; shortlist |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        f, s = r["full"], r["shortlist"]
        if r.get("eval_every") is None:  # the data could not be generated
            lines.append(f"| {r['case']} | {num(r['labels'], 'd')} | {num(r['rows'], 'd')} | "
                         + " | ".join(["failed (data)"] * 9) + " |")
            continue

        def pair(key, spec=".4f"):
            return f"{cell(f, get(f, key), spec)} / {cell(s, get(s, key), spec)}"

        d = None
        if f is not None and s is not None and get(f, "p1") is not None \
                and get(s, "p1") is not None:
            d = 100.0 * (get(s, "p1") - get(f, "p1"))

        def ttt(rec, key):
            if rec is None:
                return FAILED
            if r.get("target_p1") is None:  # the full softmax failed: no target
                return "n/a"
            v = r.get(key)
            return "not reached" if v is None else f"{v:.1f}"

        def sel(rec):
            if rec is None:
                return FAILED
            return f"{num(rec.get('selected_round'), 'd')} / {num(rec.get('rounds'), 'd')}"

        speed = ratio(get(f, "train_time_s"), get(s, "train_time_s"))
        lines.append(f"| {r['case']} | {num(r['labels'], 'd')} | {num(r['rows'], 'd')} | "
                     f"{r['eval_every']} | {pair('p1')} | {pair('p3')} | {pair('p5')} | "
                     f"{FAILED if d is None else format(d, '+.2f')} | "
                     f"{ttt(f, 'full_time_to_target_s')} / "
                     f"{ttt(s, 'shortlist_time_to_target_s')} | {pair('train_time_s', '.1f')} | "
                     f"{FAILED if speed is None else format(speed, '.2f') + 'x'} | "
                     f"{sel(f)}; {sel(s)} |")
    return lines


# --------------------------------------------------------------------------------------------


PARTS = ("scale", "accuracy", "peer", "labels")


def default_python():
    """This interpreter when it has torch, else Debian's /usr/bin/python3 (python3-torch is
    installed for it), else this interpreter (the PyTorch runs then fail with torch's error)."""
    import importlib.util
    if importlib.util.find_spec("torch") is not None:
        return sys.executable
    system = "/usr/bin/python3"
    if os.path.exists(system) and os.path.realpath(system) != os.path.realpath(sys.executable):
        return system
    return sys.executable


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--hetsgd", default=os.path.join(REPO, "build", "apps", "hetsgd"),
                   help="path of the hetsgd executable")
    p.add_argument("--parts", default="scale,accuracy",
                   help="comma-separated: scale, accuracy, peer, labels")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="threads of the one-worker runs (a, b, c and the accuracy part)")
    p.add_argument("--hidden", type=int, default=128, help="hidden width of the scale part")
    p.add_argument("--seed", type=int, default=1, help="data and model seed")
    p.add_argument("--amazon-scale", type=float, default=1.0,
                   help="scale: fraction of Amazon-670K's 490,449 training rows generated")
    p.add_argument("--full-seconds", type=float, default=60.0,
                   help="scale: training seconds of the full-softmax runs (hetsgd, PyTorch)")
    p.add_argument("--scaling-seconds", type=float, default=45.0,
                   help="scale: training seconds of each worker-scaling run")
    p.add_argument("--no-scaling", action="store_true", help="scale: skip the worker scaling")
    p.add_argument("--no-torch", action="store_true", help="scale: skip the PyTorch baseline")
    p.add_argument("--torch-scale", type=float, default=0.01,
                   help="scale: fraction of the rows in PyTorch's XC-text copy")
    p.add_argument("--torch-max-rows", type=int, default=0,
                   help="scale: PyTorch reads only this many training rows (0 = all)")
    p.add_argument("--torch-eval-points", type=int, default=500,
                   help="scale: test rows PyTorch reads and evaluates")
    p.add_argument("--torch-omp-wait", choices=["passive", "active", "default"],
                   default="passive", help="OMP_WAIT_POLICY for PyTorch (as bench_cpu.py)")
    p.add_argument("--no-peak", action="store_true", help="skip the OpenBLAS sgemm peak")
    p.add_argument("--openblas-coretype", default="auto",
                   help="auto (fix a generic detection), none (leave as detected) or a name")
    p.add_argument("--wiki10-scale", type=float, default=1.0,
                   help="accuracy: fraction of wiki10-31k's rows (0 = skip)")
    p.add_argument("--eurlex-scale", type=float, default=1.0,
                   help="accuracy: fraction of eurlex-4k's rows (0 = skip)")
    default_datasets = os.path.normpath(os.path.join(REPO, "..", "shared", "datasets"))
    p.add_argument("--datasets-dir",
                   default=default_datasets if os.path.isdir(default_datasets) else "",
                   help="accuracy: folder holding delicious/train.txt and test.txt")
    p.add_argument("--acc-epochs", type=float, default=5, help="accuracy: epochs of each run")
    p.add_argument("--acc-evals-per-epoch", type=float, default=2,
                   help="accuracy: evaluations per epoch (sets --eval-every)")
    p.add_argument("--python", default=default_python(),
                   help="python with torch and numpy (the PyTorch runs)")
    p.add_argument("--work-dir", default="",
                   help="where generated data and logs go (default: a temp dir, removed)")
    p.add_argument("--json-out", default="", help="also write every record to this JSON file")
    p.add_argument("--verbose", action="store_true", help="print the commands")
    bench_peer.add_options(p)
    args = p.parse_args(argv)
    parts = [x for x in args.parts.split(",") if x]
    for x in parts:
        if x not in PARTS:
            p.error(f"--parts: unknown part {x!r} ({', '.join(PARTS)})")
    bench_peer.check_options(p, args)
    if args.full_seconds <= 0 or args.scaling_seconds <= 0 or args.threads < 1:
        p.error("--full-seconds, --scaling-seconds and --threads must be > 0")
    bench_cpu.args_global = args  # its run_json prints the commands with --verbose
    if not os.path.exists(args.hetsgd):
        print(f"warning: {args.hetsgd} not found; every hetsgd run will fail", file=sys.stderr)

    coretype, core_note = bench_cpu.choose_coretype(args.openblas_coretype, args.python)
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    note = machine_note(args)

    work = args.work_dir or tempfile.mkdtemp(prefix="hetsgd_xmc_")
    os.makedirs(work, exist_ok=True)
    out = {"machine": note, "cpu_count": os.cpu_count(), "threads": args.threads,
           "openblas": core_note, "args": vars(args)}
    lines = []
    try:
        peak = None
        if "scale" in parts and not args.no_peak:
            try:
                peak = bench_cpu.sgemm_gflops(args.python, args.threads, coretype)[0]
            except Exception as e:  # noqa: BLE001
                print(f"sgemm peak failed: {e}", file=sys.stderr)
        out["peak_gflops"] = peak
        t0 = time.perf_counter()
        if "scale" in parts:
            lines += part_scale(args, env, work, peak, out) + [""]
        if "accuracy" in parts:
            lines += part_accuracy(args, env, work, out) + [""]
        if "peer" in parts:
            lines += bench_peer.part_peer(args, env, work, out) + [""]
        if "labels" in parts:
            lines += bench_peer.part_labels(args, env, work, out) + [""]
        out["bench_wall_s"] = time.perf_counter() - t0
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)

    print()
    print(note)
    print(f"{core_note}." + (f" OpenBLAS sgemm peak (2048^3, {args.threads} threads): "
                             f"{peak:.1f} GFLOP/s." if peak else ""))
    if MISSING_FLAGS:
        print(f"hetsgd train lacks these flags, left out: {' '.join(sorted(MISSING_FLAGS))}")
    print()
    print("\n".join(lines).rstrip())
    out["missing_flags"] = sorted(MISSING_FLAGS)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
