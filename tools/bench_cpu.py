#!/usr/bin/env python3
"""Side-by-side CPU benchmark: hetsgd against the PyTorch baseline on the identical model.

For every case (real bibtex and delicious from --datasets-dir, and EURLex-4K- and
Amazon-670K-shaped synthetic data written by `hetsgd data gen`, scaled down so the whole run
takes minutes) it runs, in this one process:
  * hetsgd `train` on one CPU worker with --threads threads, and the PyTorch baseline
    (tools/pytorch_baseline.py) with the same thread count, learning rate, batch, epochs;
  * with --workers=2 (default), hetsgd synchronous SGD on two CPU workers against PyTorch
    DistributedDataParallel over gloo with two processes (each half the threads and half the
    global batch).
With --output-layers=full,shortlist each hetsgd run is repeated per output layer (the
shortlisted layer: positives + HNSW hard negatives + sampled negatives), beside the same PyTorch
run. Every process's peak resident set size is measured (wait4's ru_maxrss).
and prints a markdown table: epoch time of each, their ratio, samples/s, P@1, peak RSS, the achieved
GFLOP/s of the dense layers against the OpenBLAS sgemm peak measured here with the same number
of threads (numpy's float32 matmul, which calls the same libopenblas through cblas_sgemm).

FLOP counted per epoch of N rows (h hidden units, L labels, nnz stored features):
  dense (output layer): forward Z = H W1, dW1 = H^T dZ, dH = dZ W1^T -> 3 * 2 * N * h * L;
  sparse (first layer): forward X W0 and the row-sparse dW0 = X^T dH   -> 2 * 2 * nnz * h.
"GFLOP/s" divides these by the whole epoch time, so it is a lower bound on the kernels' rate.

OpenBLAS chooses its kernels at load time from the CPU model. Version 0.3.21 (Debian 12) does not
know recent Xeons (it falls back to the generic "Prescott" SSE3 kernels, about 5x slower), so by
default (--openblas-coretype=auto) the script detects that and sets OPENBLAS_CORETYPE for every
process it starts (hetsgd, PyTorch and the peak), and says so in the output.

Example:
  tools/bench_cpu.py --hetsgd=build/apps/hetsgd --datasets-dir=DIR --threads=2 --epochs=3
  tools/bench_cpu.py --hetsgd=build/apps/hetsgd --cases=amazon-670k --workers=1 \
      --output-layers=full,shortlist
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE = os.path.join(HERE, "pytorch_baseline.py")


# --------------------------------------------------------------------------------------------
# Environment: OpenBLAS core type and the sgemm peak


GNU_TIME = "/usr/bin/time"


def peak_rss_command(cmd, rss_path):
    """`cmd` to run instead of `cmd` so that its own peak RSS can be read afterwards with
    read_peak_rss(rss_path, usage). A child's ru_maxrss (wait4) starts from its parent's RSS at
    fork: Linux copies the parent's high-water mark into the child, so every command a Python
    benchmark holding data spawns would report at least that benchmark's own RSS (hundreds of
    MB beside a 4 MB model). GNU time (Debian's `time`, tools/install_deps.sh) is a small
    parent: the peak it reports is the command's own."""
    if os.access(GNU_TIME, os.X_OK):
        return [GNU_TIME, "-q", "-f", "%M", "-o", rss_path] + list(cmd)
    return list(cmd)


def read_peak_rss(rss_path, usage):
    """Peak RSS in MB of a command run as peak_rss_command() made it: GNU time's report, else
    wait4's `usage` (which then includes the parent's RSS at fork)."""
    try:
        with open(rss_path) as f:
            lines = [x for x in f.read().split() if x.isdigit()]
        if lines:
            return int(lines[-1]) / 1024.0  # KiB
    except OSError:
        pass
    return usage.ru_maxrss / 1024.0  # Linux reports KiB


def openblas_detected_core(python):
    """The core OpenBLAS picks on its own (OPENBLAS_VERBOSE=2 prints 'Core: NAME')."""
    env = dict(os.environ, OPENBLAS_VERBOSE="2")
    env.pop("OPENBLAS_CORETYPE", None)
    out = subprocess.run([python, "-c", "import numpy"], env=env, capture_output=True, text=True)
    m = re.search(r"Core:\s*(\S+)", out.stdout + out.stderr)
    return m.group(1) if m else "unknown"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def choose_coretype(requested, python):
    """Returns (value for OPENBLAS_CORETYPE or None, a sentence for the report)."""
    detected = openblas_detected_core(python)
    if requested == "none":
        return None, f"OpenBLAS core {detected} (as detected)"
    if requested != "auto":
        return requested, f"OpenBLAS core forced to {requested} (detected {detected})"
    flags = cpu_flags()
    if detected.lower() in ("prescott", "katmai", "coppermine", "northwood", "core2",
                            "unknown") and ("avx512f" in flags or "avx2" in flags):
        forced = "SkylakeX" if "avx512f" in flags else "Haswell"
        return forced, (f"OpenBLAS detected core {detected} (generic kernels) on a CPU with "
                        f"{'AVX-512' if forced == 'SkylakeX' else 'AVX2'}: OPENBLAS_CORETYPE="
                        f"{forced} set for every process")
    return None, f"OpenBLAS core {detected} (as detected)"


PEAK_SNIPPET = r"""
import sys, time, numpy as np
n, reps = int(sys.argv[1]), int(sys.argv[2])
shapes = [(n, n, n)] + [tuple(int(v) for v in s.split("x")) for s in sys.argv[3:]]
out = []
for (m, k, q) in shapes:
    a = np.random.rand(m, k).astype(np.float32); b = np.random.rand(k, q).astype(np.float32)
    a @ b
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
    out.append(2.0 * m * k * q / best / 1e9)
print(" ".join("%.3f" % v for v in out))
"""


def sgemm_gflops(python, threads, coretype, extra_shapes=(), n=2048, reps=5):
    """Best-of-`reps` OpenBLAS sgemm GFLOP/s with `threads` threads: square n first, then each
    'MxKxN' shape of `extra_shapes`."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run([python, "-c", PEAK_SNIPPET, str(n), str(reps), *extra_shapes],
                         env=env, capture_output=True, text=True, check=True)
    return [float(v) for v in out.stdout.split()]


# --------------------------------------------------------------------------------------------
# Data


def xc_stats(path):
    """(rows, features, labels, nnz) of an XC text file (header plus a count of ':' pairs)."""
    with open(path) as f:
        rows, feats, labels = (int(v) for v in f.readline().split()[:3])
        nnz = sum(line.count(":") for line in f)
    return rows, feats, labels, nnz


def generate(hetsgd, preset, scale, seed, out_dir):
    """Writes a synthetic preset through `hetsgd data gen`; returns (train, test) paths."""
    prefix = os.path.join(out_dir, preset)
    cmd = [hetsgd, "data", "gen", f"--preset={preset}", f"--scale={scale}", f"--seed={seed}",
           f"--out={prefix}", "--format=xc"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return prefix + "_train.txt", prefix + "_test.txt"


# --------------------------------------------------------------------------------------------
# The two trainers


def find_metric(record, key):
    """`key` at the top level of a JSON record, else in its final/metrics/last-eval part."""
    if key in record and isinstance(record[key], (int, float)):
        return float(record[key])
    for sub in ("final", "metrics", "test", "final_metrics"):
        if isinstance(record.get(sub), dict) and key in record[sub]:
            return float(record[sub][key])
    for seq in ("evals", "curve", "evaluations"):
        if isinstance(record.get(seq), list) and record[seq]:
            last = record[seq][-1]
            if isinstance(last, dict):
                v = find_metric(last, key)
                if v is not None:
                    return v
    return None


_HELP_CACHE = {}


def hetsgd_supports(hetsgd, flag):
    if hetsgd not in _HELP_CACHE:
        out = subprocess.run([hetsgd, "train", "--help"], capture_output=True, text=True)
        _HELP_CACHE[hetsgd] = out.stdout + out.stderr
    return flag in _HELP_CACHE[hetsgd]


def run_hetsgd(args, env, train, test, workers, threads, output_layer="full", algo="sync"):
    """Runs `hetsgd train` once and returns its JSON record (the only place that knows the
    command line). One worker: plain SGD/Adam on cpu:0. Several: synchronous SGD (equal shares
    of the global batch, gradient all-reduce), the algorithm PyTorch DDP runs, or with
    algo="adaptive" adaptive SGD (each worker b = batch / workers, a merge per round)."""
    devices = ",".join(f"cpu:{i}" for i in range(workers))
    cmd = [args.hetsgd, "train", f"--train={train}", f"--test={test}", f"--devices={devices}",
           f"--hidden={args.hidden}", f"--optimizer={args.optimizer}", f"--lr={args.lr}",
           f"--batch={args.batch // workers}", f"--epochs={args.epochs}",
           f"--threads={max(1, threads // workers)}", f"--seed={args.seed}", "--json"]
    # Same schedule as the baseline: constant lr, no warm-up, evaluation only at the end.
    optional = {"--algo": algo, "--lr-scaling": "none", "--warmup-epochs": "0",
                "--lambda": "0", "--eval-every": "1000000000", "--loss": args.loss,
                "--output-layer": output_layer}
    for flag, value in optional.items():
        if hetsgd_supports(args.hetsgd, flag):
            cmd.append(f"{flag}={value}")
    return run_json(cmd, env, "hetsgd")


def run_torch(args, env, train, test, workers, threads):
    cmd = [args.python, BASELINE, f"--train={train}", f"--test={test}", f"--hidden={args.hidden}",
           f"--optimizer={args.optimizer}", f"--lr={args.lr}", f"--batch={args.batch}",
           f"--epochs={args.epochs}", f"--threads={threads}", f"--seed={args.seed}",
           f"--loss={args.loss}", f"--init={args.torch_init}", "--json", "--quiet",
           # The tables in RESULTS.md from this script were measured with SparseAdam.
           "--sparse-optimizer=sparse-adam"]
    if workers > 1:
        cmd += ["--ddp", f"--world={workers}"]
    per_process = max(1, threads // workers)
    env = dict(env, OPENBLAS_NUM_THREADS=str(per_process), OMP_NUM_THREADS=str(per_process))
    if args.torch_omp_wait != "default":
        env["OMP_WAIT_POLICY"] = args.torch_omp_wait.upper()
    return run_json(cmd, env, "pytorch")


def best_of(repeats, fn):
    """Runs `fn` `repeats` times and keeps the record with the shortest training time (machines
    are shared and noisy; the minimum is the least disturbed run)."""
    best = None
    for _ in range(max(1, repeats)):
        rec = fn()
        if best is None or float(rec.get("train_time_s") or 0) < float(best.get("train_time_s") or 0):
            best = rec
    return best


def run_json(cmd, env, what):
    if args_global.verbose:
        print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se, \
            tempfile.NamedTemporaryFile("r") as rss:
        proc = subprocess.Popen(peak_rss_command(cmd, rss.name), env=env, stdout=so, stderr=se,
                                text=True)
        # wait4 gives this child's own rusage (RUSAGE_CHILDREN would be the max over all).
        _, status, usage = os.wait4(proc.pid, 0)
        peak_mb = read_peak_rss(rss.name, usage)
        proc.returncode = os.waitstatus_to_exitcode(status)
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read(), se.read()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({proc.returncode}): {' '.join(cmd)}\n"
                           f"{stderr[-2000:]}")
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            rec = json.loads(line)
            rec["_wall_s"] = wall
            rec["_peak_rss_mb"] = peak_mb
            return rec
    raise RuntimeError(f"{what}: no JSON record on stdout: {' '.join(cmd)}\n{stdout[-2000:]}")


# --------------------------------------------------------------------------------------------
# Report


def summarise(rec, rows, epochs):
    train_s = float(rec.get("train_time_s") or 0.0)
    ep = rec.get("epochs") or epochs
    try:
        ep = float(ep)
    except (TypeError, ValueError):
        ep = float(epochs)
    epoch_s = train_s / ep if ep > 0 else float("nan")
    sps = rec.get("samples_per_s") or (rows * ep / train_s if train_s > 0 else 0.0)
    return {"epoch_s": epoch_s, "samples_per_s": float(sps), "p1": find_metric(rec, "p1"),
            "p3": find_metric(rec, "p3"), "p5": find_metric(rec, "p5"), "train_s": train_s,
            "peak_rss_mb": rec.get("_peak_rss_mb")}


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def main(argv=None):
    global args_global
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--hetsgd", default=shutil.which("hetsgd") or "hetsgd",
                   help="path of the hetsgd executable")
    p.add_argument("--datasets-dir", default="",
                   help="folder holding bibtex/ and delicious/ with train.txt and test.txt")
    p.add_argument("--cases", default="bibtex,delicious,eurlex-4k,amazon-670k",
                   help="comma-separated: real names (under --datasets-dir) or synthetic presets")
    p.add_argument("--synthetic-scale", default="eurlex-4k=0.25,amazon-670k=0.0015",
                   help="row fraction per synthetic preset")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads in total")
    p.add_argument("--workers", default="1,2",
                   help="worker counts to run: 1 (one device) and/or 2 (sync SGD vs DDP)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--amazon-epochs", type=int, default=1,
                   help="epochs for amazon-670k (its 670K-label output layer dominates)")
    p.add_argument("--batch", type=int, default=256, help="global batch size")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--loss", choices=["softmax", "bce"], default="softmax")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--openblas-coretype", default="auto",
                   help="auto (fix a generic detection), none (leave as detected) or a name")
    p.add_argument("--torch-init", choices=["hetsgd", "torch"], default="hetsgd",
                   help="hetsgd: PyTorch starts from hetsgd's exact initial weights (same "
                        "distribution, same draw); torch: its own draw")
    p.add_argument("--repeats", type=int, default=1,
                   help="runs per trainer and case; the fastest is reported")
    p.add_argument("--torch-omp-wait", choices=["passive", "active", "default"],
                   default="passive",
                   help="OMP_WAIT_POLICY for PyTorch: GOMP's spinning barrier (the default) "
                        "slows it several-fold when other processes share the cores")
    p.add_argument("--python", default=sys.executable, help="python with torch and numpy")
    p.add_argument("--work-dir", default="", help="where generated data goes (default: temp)")
    p.add_argument("--json-out", default="", help="also write every record to this JSON file")
    p.add_argument("--output-layers", default="full",
                   help="hetsgd output layers to run per case: full and/or shortlist")
    p.add_argument("--algos", default="sync",
                   help="hetsgd algorithms for workers > 1: sync (against DDP) and/or adaptive")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch baseline")
    p.add_argument("--verbose", action="store_true", help="print the commands")
    args = p.parse_args(argv)
    args_global = args
    worker_counts = [int(w) for w in args.workers.split(",") if w]
    scales = dict(kv.split("=") for kv in args.synthetic_scale.split(",") if kv)

    coretype, core_note = choose_coretype(args.openblas_coretype, args.python)
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype

    work = args.work_dir or tempfile.mkdtemp(prefix="hetsgd_bench_")
    os.makedirs(work, exist_ok=True)
    cases = []
    for name in [c for c in args.cases.split(",") if c]:
        real = os.path.join(args.datasets_dir, name) if args.datasets_dir else ""
        if real and os.path.exists(os.path.join(real, "train.txt")):
            cases.append((name, os.path.join(real, "train.txt"), os.path.join(real, "test.txt")))
        elif name in scales:
            tr, te = generate(args.hetsgd, name, scales[name], args.seed, work)
            cases.append((f"{name} (synthetic x{scales[name]})", tr, te))
        else:
            print(f"skipping {name}: not under --datasets-dir and no --synthetic-scale",
                  file=sys.stderr)

    results = []
    peak = sgemm_gflops(args.python, args.threads, coretype)[0]
    for name, train, test in cases:
        rows, feats, labels, nnz = xc_stats(train)
        epochs = args.amazon_epochs if "amazon" in name else args.epochs
        case_args = argparse.Namespace(**vars(args))
        case_args.epochs = epochs
        dense_flop = 3 * 2.0 * rows * args.hidden * labels  # per epoch
        sparse_flop = 2 * 2.0 * nnz * args.hidden
        for workers in worker_counts:
            t = {}
            if not args.no_torch:
                print(f"[{name}] workers={workers}: pytorch ...", file=sys.stderr, flush=True)
                t = best_of(args.repeats,
                            lambda: run_torch(case_args, env, train, test, workers, args.threads))
            algos = [a for a in args.algos.split(",") if a] if workers > 1 else ["sync"]
            for layer, algo in [(v, a) for v in args.output_layers.split(",") if v
                                for a in algos]:
                print(f"[{name}] workers={workers}: hetsgd --output-layer={layer} "
                      f"--algo={algo} ...", file=sys.stderr, flush=True)
                h = best_of(args.repeats,
                            lambda: run_hetsgd(case_args, env, train, test, workers, args.threads,
                                               layer, algo))
                hs = summarise(h, rows, epochs)
                ts = summarise(t, rows, epochs) if t else None
                results.append({"case": name, "workers": workers, "threads": args.threads,
                                "algo": algo if workers > 1 else "-",
                                "output_layer": layer, "rows": rows, "features": feats,
                                "labels": labels, "nnz": nnz, "epochs": epochs,
                                "dense_flop_per_epoch": dense_flop,
                                "sparse_flop_per_epoch": sparse_flop, "hetsgd": hs,
                                "pytorch": ts, "hetsgd_record": h, "pytorch_record": t})

    peak_detected = None
    if coretype:
        peak_detected = sgemm_gflops(args.python, args.threads, None)[0]

    print()
    print(f"CPU: {os.cpu_count()} logical cores; {args.threads} threads in total; "
          f"{core_note}.")
    print(f"OpenBLAS sgemm peak (2048^3, {args.threads} threads): {peak:.1f} GFLOP/s")
    if peak_detected is not None:
        print(f"OpenBLAS sgemm peak with the detected core (no OPENBLAS_CORETYPE): "
              f"{peak_detected:.1f} GFLOP/s")
    print(f"Model: sparse -> {args.hidden} (ReLU) -> L, {args.loss} loss, {args.optimizer} "
          f"lr={args.lr}, global batch {args.batch}; workers=2 is hetsgd sync SGD on "
          f"cpu:0,cpu:1 vs PyTorch DDP (gloo, 2 processes); PyTorch OMP_WAIT_POLICY="
          f"{args.torch_omp_wait}; PyTorch init {args.torch_init}; best of {max(1, args.repeats)} run(s).")
    print()
    print("| case | workers | hetsgd output layer | hetsgd s/epoch | torch s/epoch | torch/hetsgd "
          "| hetsgd samples/s | torch samples/s | hetsgd P@1 | torch P@1 | hetsgd / torch peak "
          "RSS MB | hetsgd dense GFLOP/s (% peak) | torch dense GFLOP/s (% peak) "
          "| sparse GFLOP/s hetsgd / torch |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    nan = float("nan")
    for r in results:
        hs = r["hetsgd"]
        ts = r["pytorch"] or {"epoch_s": nan, "samples_per_s": nan, "p1": None,
                              "peak_rss_mb": None}
        ratio = ts["epoch_s"] / hs["epoch_s"] if hs["epoch_s"] > 0 else nan
        # Dense FLOP of the full output layer: for a shortlist this is the work it avoids,
        # so its "GFLOP/s" is an equivalent rate, not what its kernels ran.
        hd = r["dense_flop_per_epoch"] / hs["epoch_s"] / 1e9
        td = r["dense_flop_per_epoch"] / ts["epoch_s"] / 1e9
        hsp = r["sparse_flop_per_epoch"] / hs["epoch_s"] / 1e9
        tsp = r["sparse_flop_per_epoch"] / ts["epoch_s"] / 1e9
        wk = f"{r['workers']}" + (f" {r['algo']}" if r.get("algo", "-") != "-" else "")
        print(f"| {r['case']} (L={r['labels']}) | {wk} | {r['output_layer']} | "
              f"{hs['epoch_s']:.3f} | {ts['epoch_s']:.3f} | {ratio:.2f} | "
              f"{hs['samples_per_s']:.0f} | {ts['samples_per_s']:.0f} | "
              f"{fmt(hs['p1'], '.4f')} | {fmt(ts['p1'], '.4f')} | "
              f"{fmt(hs['peak_rss_mb'], '.0f')} / {fmt(ts['peak_rss_mb'], '.0f')} | "
              f"{hd:.1f} ({100 * hd / peak:.0f}%) | {td:.1f} ({100 * td / peak:.0f}%) | "
              f"{hsp:.2f} / {tsp:.2f} |")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"peak_gflops": peak, "peak_detected_core_gflops": peak_detected,
                       "openblas": core_note, "threads": args.threads, "results": results}, f,
                      indent=1)
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


args_global = None

if __name__ == "__main__":
    sys.exit(main())
