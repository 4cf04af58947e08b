#!/usr/bin/env python3
"""Training through Python against the command line on the same data and options, and the
top-5 of a loaded model against `hetsgd predict`.

    PYTHONPATH=build/apps/python /usr/bin/python3 tools/bench_python.py \\
        --data /work/shared/datasets/bibtex --hetsgd build/apps/hetsgd [--repeats 3]

Runs the CLI and Python alternately `--repeats` times each (the same options, one device
with all threads, deterministic data order) and prints the medians of the engine's training
time (train_time_s: evaluation excluded) and of the wall time of the whole training call (the
CLI process, file reading included; hetsgd.train on scipy matrices). Then saves the Python
model, loads it back and compares its top-5 on the test set with `hetsgd predict -k 5` of the
same file: labels must be identical, scores equal to the printed precision. Exits 1 when
Python's training time is more than 5% above the command line's (ratio > 1.05) or any top-5
differs. A ratio below 1 is reported, not failed: the Python runs share one warm process
while every CLI run starts a fresh one, and on a busy machine run-to-run spread exceeds 5%.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import hetsgd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/work/shared/datasets/bibtex",
                    help="folder with train.txt and test.txt (XC format)")
    ap.add_argument("--hetsgd", default="build/apps/hetsgd", help="the command line binary")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epochs", type=float, default=10)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    train_file, test_file = Path(args.data) / "train.txt", Path(args.data) / "test.txt"
    options = {"epochs": args.epochs, "devices": "cpu", "threads": args.threads,
               "deterministic": True}
    cli_flags = [f"--{k}={('true' if v is True else v)}" for k, v in options.items()]

    X, Y = hetsgd.read(train_file)
    Xt, Yt = hetsgd.read(test_file)
    cli_train, cli_wall, py_train, py_wall = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = subprocess.run([args.hetsgd, "train", "--train", str(train_file), "--test",
                                  str(test_file), "-q", "--json", *cli_flags],
                                 capture_output=True, text=True, check=True)
            cli_wall.append(time.perf_counter() - t0)
            cli_train.append(json.loads(out.stdout)["train_time_s"])
            t0 = time.perf_counter()
            model = hetsgd.train(X, Y, test=(Xt, Yt), progress=False, **options)
            py_wall.append(time.perf_counter() - t0)
            py_train.append(model.result["train_time_s"])
        path = Path(tmp) / "py.model"
        model.save(path)
        loaded = hetsgd.load(path)
        labels, scores = loaded.predict(Xt, k=5)
        out = subprocess.run([args.hetsgd, "predict", "-m", str(path), "-d", str(test_file),
                              "-k", "5"], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    cli_labels = np.array([[int(p.split(":")[0]) for p in ln.split()] for ln in lines])
    cli_scores = np.array([[float(p.split(":")[1]) for p in ln.split()] for ln in lines])
    same_rows = int(np.sum(np.all(cli_labels == labels, axis=1)))
    score_err = float(np.max(np.abs(cli_scores - scores) / np.maximum(1.0, np.abs(scores))))

    med = statistics.median
    ratio = med(py_train) / med(cli_train)
    wall_ratio = med(py_wall) / med(cli_wall)
    print(f"data {args.data}: {X.shape[0]} train rows, {Xt.shape[0]} test rows; options "
          f"{' '.join(cli_flags)}; {args.repeats} runs each")
    print("engine training time per run: CLI", [round(t, 3) for t in cli_train], "Python",
          [round(t, 3) for t in py_train])
    print(f"engine training time (median): CLI {med(cli_train):.3f} s, Python "
          f"{med(py_train):.3f} s, ratio Python/CLI {ratio:.3f}")
    print(f"whole call (median): CLI process {med(cli_wall):.3f} s (files read), Python "
          f"hetsgd.train {med(py_wall):.3f} s (scipy matrices), ratio {wall_ratio:.3f}")
    print(f"top-5 from the loaded model vs `hetsgd predict`: {same_rows}/{len(labels)} rows "
          f"identical, largest relative score difference {score_err:.2e}")
    ok = ratio <= 1.05 and same_rows == len(labels) and score_err < 1e-5
    print("bench_python:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
