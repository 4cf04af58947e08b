#!/usr/bin/env python3
"""Real-data benchmark: hetsgd beside napkinXC, LIBLINEAR, fastText and a k-NN, side by side.

What it measures
  On each real data set (default bibtex, delicious, debian-deps under --data-root, each a folder
  with train.txt and test.txt in Extreme Classification Repository text format) every method is
  trained on the whole training file and ranks the test rows; the script scores every method's
  top 5 itself, the same way for all: P@1/3/5 and PSP@1/3/5 (Jain et al. 2016 propensities,
  A=0.55 B=1.5 as `hetsgd eval` uses for these names, N = training rows; PSP@k is normalised by
  the best attainable PSP@k, a ratio of means as in pyxclib). Beside them: train seconds and
  predict seconds (wall time of the commands, data loading included), model MB (the files or
  arrays that predicting needs) and the peak resident set size of each process (GNU time's,
  bench_cpu.peak_rss_command(); for a method run as several commands, the largest).

The methods (--peers)
  plt, ova   napkinXC 0.7.2 probabilistic label tree (`-m plt`) and one-vs-all (`-m br`, binary
             relevance; napkinXC's `ovr` is multi-class), LIBLINEAR dual logistic regression
             underneath, -t --threads. Built from --napkinxc-src into --napkinxc-build (outside
             the repository) with cmake when the binary is missing. Grid: C x arity / C.
             PLT is also reported with its untuned defaults (C 10, arity 2).
  liblinear  one-vs-rest with Debian's LIBLINEAR 2.3 (liblinear4, the library behind
             liblinear-tools): one binary problem per label. liblinear-train would re-read the
             whole training file for each label (about 1 s each on debian-deps: hours), so a
             worker process loads the data once and calls the library's train() through ctypes,
             --threads labels at a time (same solvers; the weights agree with liblinear-train's
             to the solver's tolerance, checked on bibtex). Weights |w| < --ll-prune
             are dropped (dense weights of 22,912 labels would need 8 GB); a Python scorer ranks.
  fasttext   fastText 0.9.2 `-loss ova`, each feature id a word token once: feature VALUES
             (tf-idf on debian-deps) are lost. Grid: lr x epoch (dim 100); a grid point that
             diverges (NaN) is skipped, a final run that does is rerun at half the lr.
  knn        cosine k-NN (scipy sparse, rows L2-normalised), label score = sum of the
             similarities of the k nearest training rows that carry it. Grid: k.
  hetsgd     `hetsgd train --train --test --json -o MODEL` with its defaults and each flag list
             of --hetsgd-variants, then `hetsgd predict -k 5` for the predict time. hetsgd is not
             tuned here: it chooses its own settings on a validation split of the training rows.
             Its train seconds include the test evaluation it runs itself; its own metrics are
             kept in the JSON file and a difference from ours is reported.

Tuning (never on test)
  Peers are tuned on a validation split of the training file (--val-fraction, --seed): trained
  on the rest, the grid point with the largest validation P@1+P@3+P@5 wins, and the final model
  is trained on the whole training file with it. Tuning time is not in "train s". On data sets
  with more than --big-labels labels the one-vs-rest peers (ova, liblinear) and fastText, whose
  cost grows with every label, are not tuned: they use fixed settings (see BIG_* below) and the
  one-vs-rest peers train only the --ovr-max-labels most frequent labels (0 = all); LIBLINEAR
  also stops adding labels after --ll-budget seconds. The report says where this happened.

Output: a Markdown table per data set on stdout and in --out (header: command, commit, date,
hardware, options) and every number in --out with .json. Scratch files live in a temporary
folder removed at exit. Python 3.11 with numpy and scipy (Debian: /usr/bin/python3).

Example:
  nice -n 5 /usr/bin/python3 tools/bench_real.py --datasets=bibtex --peers=plt,knn,hetsgd
"""

import argparse
import concurrent.futures
import ctypes
import datetime
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_cpu  # noqa: E402  (OpenBLAS core-type detection, shared with the CPU benchmark)

TOPK = 5
ALL_PEERS = ["plt", "ova", "liblinear", "fasttext", "knn", "hetsgd"]
DEFAULT_VARIANTS = ";--forest=off;--forest=off --tail-weight=0"

# Defaults and grids. napkinXC's own defaults are C 10, arity 2; LIBLINEAR's C 1, -s 1
# (dual L2-loss SVM); fastText's lr 0.1, epoch 5, dim 100.
PLT_DEFAULT = {"C": 10.0, "arity": 2}
PLT_GRID = [{"C": c, "arity": a} for c in (0.1, 1.0, 10.0) for a in (2, 16)]
OVA_DEFAULT = {"C": 10.0}
OVA_GRID = [{"C": c} for c in (1.0, 10.0)]
LL_DEFAULT = {"solver": 1, "C": 1.0}
LL_GRID = [{"solver": s, "C": c} for s in (1, 7) for c in (0.01, 0.1, 1.0)]
FT_DEFAULT = {"lr": 0.1, "epoch": 5, "dim": 100}
FT_GRID = [{"lr": lr, "epoch": ep, "dim": 100} for lr in (0.1, 0.25, 0.5) for ep in (5, 25)]
KNN_DEFAULT = {"k": 10}
KNN_GRID = [{"k": k} for k in (5, 10, 25, 50, 100)]
# fastText ova costs labels x dim per row and epoch: about 3 min an epoch at dim 100 on
# debian-deps (22,912 labels, 2 busy cores). Above --big-labels it runs untuned with its
# defaults at dim 50 (half the cost); lr 0.5 (its one-vs-all example's) diverged there (NaN).
BIG_FT = {"lr": 0.1, "epoch": 5, "dim": 50}
LL_SOLVERS = {1: "L2R_L2LOSS_SVC_DUAL", 7: "L2R_LR_DUAL"}


# --------------------------------------------------------------------------------------------
# Data


@dataclass
class XC:
    """One XC text file as sparse matrices: X (rows x features), Y (rows x labels, 0/1)."""
    X: sp.csr_matrix
    Y: sp.csr_matrix

    @property
    def rows(self):
        return self.X.shape[0]


def read_xc(path):
    with open(path) as f:
        _, n_feat, n_lab = (int(v) for v in f.readline().split()[:3])
        labels, tokens, nnz = [], [], []
        for line in f:
            # A row without labels starts with a space: partition gives an empty label part.
            lab, _, feats = line.rstrip("\n").partition(" ")
            labels.append([int(v) for v in lab.split(",") if v])
            toks = feats.replace(":", " ").split()
            tokens.extend(toks)
            nnz.append(len(toks) // 2)
    pairs = np.array(tokens, dtype=np.float64).reshape(-1, 2)
    indptr = np.concatenate([[0], np.cumsum(nnz)])
    X = sp.csr_matrix((pairs[:, 1].astype(np.float32), pairs[:, 0].astype(np.int32), indptr),
                      shape=(len(nnz), n_feat))
    return XC(X, labels_matrix(labels, n_lab))


def labels_matrix(labels, n_lab):
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in labels])])
    ind = np.fromiter((l for r in labels for l in r), dtype=np.int32, count=int(indptr[-1]))
    return sp.csr_matrix((np.ones(len(ind), np.float32), ind, indptr), shape=(len(labels), n_lab))


def write_xc(path, data):
    X, Y = data.X, data.Y
    with open(path, "w") as f:
        f.write(f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}\n")
        for r in range(X.shape[0]):
            labs = ",".join(map(str, Y.indices[Y.indptr[r]:Y.indptr[r + 1]]))
            lo, hi = X.indptr[r], X.indptr[r + 1]
            feats = " ".join(f"{i}:{v:.6g}" for i, v in zip(X.indices[lo:hi], X.data[lo:hi]))
            f.write(f"{labs} {feats}\n")


def subset(data, rows):
    return XC(data.X[rows], data.Y[rows])


def restrict_labels(data, keep):
    """The same rows with only the labels in `keep` (a boolean mask over label ids)."""
    Y = data.Y.tocoo()
    m = keep[Y.col]
    return XC(data.X, sp.csr_matrix((Y.data[m], (Y.row[m], Y.col[m])), shape=Y.shape))


@dataclass
class DataSet:
    name: str
    train_path: str
    test_path: str
    train: XC
    test: XC
    fit: XC = None        # training rows less the validation rows
    val: XC = None
    fit_path: str = ""
    val_path: str = ""
    inv_prop: np.ndarray = None
    big: bool = False     # more labels than --big-labels
    ovr_keep: np.ndarray = None  # labels the one-vs-rest peers train (None = all)
    cache: dict = field(default_factory=dict)  # derived files, by key


def load_dataset(name, folder, args, tmp):
    train_path, test_path = (os.path.join(folder, f) for f in ("train.txt", "test.txt"))
    ds = DataSet(name, train_path, test_path, read_xc(train_path), read_xc(test_path))
    ds.inv_prop = inverse_propensity(ds.train.Y, args.psp_a, args.psp_b)
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(ds.train.rows)
    n_val = int(round(args.val_fraction * ds.train.rows))
    ds.val = subset(ds.train, np.sort(perm[:n_val]))
    ds.fit = subset(ds.train, np.sort(perm[n_val:]))
    ds.fit_path, ds.val_path = (os.path.join(tmp, f"{name}.{p}.txt") for p in ("fit", "val"))
    write_xc(ds.fit_path, ds.fit)
    write_xc(ds.val_path, ds.val)
    n_labels = ds.train.Y.shape[1]
    ds.big = n_labels > args.big_labels
    if args.ovr_max_labels and n_labels > args.ovr_max_labels:
        counts = np.asarray(ds.train.Y.sum(axis=0)).ravel()
        ds.ovr_keep = np.zeros(n_labels, bool)
        ds.ovr_keep[np.argsort(-counts, kind="stable")[:args.ovr_max_labels]] = True
    return ds


# --------------------------------------------------------------------------------------------
# Metrics


def inverse_propensity(Y_train, a, b):
    """1/p_l = 1 + C (N_l + B)^-A, C = (ln N - 1)(B + 1)^A, N = training rows (core/metrics.h)."""
    n = Y_train.shape[0]
    counts = np.asarray(Y_train.sum(axis=0)).ravel()
    c = (np.log(n) - 1.0) * (b + 1.0) ** a
    return 1.0 + c * (counts + b) ** (-a)


def ranking_metrics(top, Y, inv_prop):
    """P@k and PSP@k for k = 1, 3, 5 of `top` (rows x 5 label ids, -1 = none) against Y.

    Rows without labels stay in the denominators (XC Repository convention)."""
    n = Y.shape[0]
    valid = top >= 0
    safe = np.where(valid, top, 0)
    hits = np.asarray(Y[np.repeat(np.arange(n), TOPK), safe.ravel()]).reshape(n, TOPK) > 0
    hits &= valid
    weighted = np.where(hits, inv_prop[safe], 0.0)
    best = best_weights(Y, inv_prop)
    out = {}
    for k in (1, 3, 5):
        out[f"p{k}"] = hits[:, :k].sum() / (n * k)
        ideal = best[:, :k].sum()
        out[f"psp{k}"] = weighted[:, :k].sum() / ideal if ideal > 0 else 0.0
    return out


def best_weights(Y, inv_prop):
    """Per row, the 5 largest inverse propensities among its true labels (0-padded)."""
    best = np.zeros((Y.shape[0], TOPK))
    for r in range(Y.shape[0]):
        w = np.sort(inv_prop[Y.indices[Y.indptr[r]:Y.indptr[r + 1]]])[::-1][:TOPK]
        best[r, :len(w)] = w
    return best


def val_objective(m):
    return m["p1"] + m["p3"] + m["p5"]


def parse_topk_lines(path, n_rows):
    """'label:score label:score ...' lines (napkinXC, hetsgd predict) -> rows x 5 label ids."""
    top = np.full((n_rows, TOPK), -1, dtype=np.int64)
    with open(path) as f:
        for r, line in enumerate(f):
            labs = [int(t.split(":")[0]) for t in line.split()[:TOPK]]
            top[r, :len(labs)] = labs
    return top


def topk_of_scores(scores):
    """Rows x 5 best label ids of a dense score block, best first."""
    k = min(TOPK, scores.shape[1])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, part, 1), axis=1, kind="stable")
    top = np.take_along_axis(part, order, 1)
    # A label scored -inf (never trained) is no prediction.
    top = np.where(np.isneginf(np.take_along_axis(scores, top, 1)), -1, top)
    return np.pad(top, ((0, 0), (0, TOPK - k)), constant_values=-1)


# --------------------------------------------------------------------------------------------
# Running and measuring commands


class PeerTimeout(RuntimeError):
    pass


class Interrupted(Exception):
    """SIGTERM: raised in the main thread so that the scratch folder is removed and the entries
    measured so far are reported."""


def on_sigterm(signum, frame):
    raise Interrupted(f"signal {signum}")


@dataclass
class Measured:
    wall_s: float
    rss_mb: float
    stdout: str


def run_measured(cmd, env, timeout=None):
    """Runs `cmd`, returns its wall time, peak RSS and stdout; raises on failure or timeout."""
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se, \
            tempfile.NamedTemporaryFile("r") as rss:
        t0 = time.perf_counter()
        proc = subprocess.Popen(bench_cpu.peak_rss_command(cmd, rss.name), stdout=so, stderr=se,
                                env=env)
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer:
            timer.start()
        try:
            # wait4 rather than proc.wait(): it returns this child's own rusage.
            _, status, usage = os.wait4(proc.pid, 0)
            peak_mb = bench_cpu.read_peak_rss(rss.name, usage)
        except BaseException:  # interrupted: leave no child running behind us
            proc.kill()
            proc.wait()
            raise
        finally:
            if timer:
                timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        so.seek(0)
        se.seek(0)
        out, err = so.read().decode(errors="replace"), se.read().decode(errors="replace")
    if timer and wall >= timeout:
        raise PeerTimeout(f"killed after {timeout:.0f} s: {shlex.join(cmd)}")
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {shlex.join(cmd)}\n{err[-2000:]}")
    return Measured(wall, peak_mb, out)


def run_worker(ctx, name, params):
    """Runs one of this script's worker modes in a child process (its own RSS and timings)."""
    out = os.path.join(ctx.tmp, f"worker-{name}-{time.monotonic_ns()}")
    params = dict(params, out=out)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name,
           "--worker-args", json.dumps(params)]
    m = run_measured(cmd, ctx.env, ctx.timeout)
    with open(out + ".json") as f:
        stats = json.load(f)
    arrays = np.load(out + ".npz")
    return m, stats, {k: arrays[k] for k in arrays.files}


def path_mb(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f))
                   for d, _, files in os.walk(path) for f in files) / 1e6
    return os.path.getsize(path) / 1e6


# --------------------------------------------------------------------------------------------
# Peers. Each run() trains on one XC file, ranks another and returns a Result.


@dataclass
class Result:
    top: np.ndarray
    train_s: float
    predict_s: float
    model_mb: float
    rss_mb: float
    notes: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)


@dataclass
class Ctx:
    args: argparse.Namespace
    env: dict
    threads: int
    timeout: float
    core_note: str
    tmp: str = ""
    nxc: str = ""
    start: datetime.datetime = field(default_factory=datetime.datetime.now)
    t0: float = field(default_factory=time.perf_counter)
    results: list = field(default_factory=list)  # one dict per data set, filled as we go


class NapkinXC:
    """napkinXC's CLI: `nxc train` on an XC file, `nxc predict --topK 5` into a file."""
    defaults, grid, model = PLT_DEFAULT, PLT_GRID, "plt"
    label = "napkinXC PLT"

    def fixed(self, ds):
        return None

    def files(self, ctx, ds, train_path):
        return train_path

    def run(self, ctx, ds, train_path, test_path, params, n_test):
        model = tempfile.mkdtemp(dir=ctx.tmp)
        train = [ctx.nxc, "train", "-i", self.files(ctx, ds, train_path), "-o", model,
                 "-m", self.model, "-c", str(params["C"]), "-t", str(ctx.threads), "--seed", "1"]
        if "arity" in params:
            train += ["-a", str(params["arity"])]
        t = run_measured(train, ctx.env, ctx.timeout)
        pred = os.path.join(model, "pred.txt")
        p = run_measured([ctx.nxc, "predict", "-i", test_path, "-o", model, "--topK", str(TOPK),
                          "-t", str(ctx.threads), "--prediction", pred], ctx.env, ctx.timeout)
        top = parse_topk_lines(pred, n_test)
        os.remove(pred)
        res = Result(top, t.wall_s, p.wall_s, path_mb(model), max(t.rss_mb, p.rss_mb))
        shutil.rmtree(model)
        return res


class NapkinOVA(NapkinXC):
    defaults, grid, model = OVA_DEFAULT, OVA_GRID, "br"
    label = "napkinXC OVA (br)"

    def fixed(self, ds):
        return OVA_DEFAULT if ds.big else None

    def files(self, ctx, ds, train_path):
        """The training file with only the --ovr-max-labels most frequent labels (if set)."""
        if ds.ovr_keep is None:
            return train_path
        key = ("ovr", train_path)
        if key not in ds.cache:
            src = ds.fit if train_path == ds.fit_path else ds.train
            ds.cache[key] = os.path.join(ctx.tmp, f"{ds.name}.ovr.{len(ds.cache)}.txt")
            write_xc(ds.cache[key], restrict_labels(src, ds.ovr_keep))
        return ds.cache[key]


class Liblinear:
    """One-vs-rest LIBLINEAR in a worker process (see worker_liblinear)."""
    defaults, grid = LL_DEFAULT, LL_GRID
    label = "LIBLINEAR OvR"

    def fixed(self, ds):
        return LL_DEFAULT if ds.big else None

    def run(self, ctx, ds, train_path, test_path, params, n_test):
        a = ctx.args
        keep = None if ds.ovr_keep is None else np.flatnonzero(ds.ovr_keep).tolist()
        m, st, arr = run_worker(ctx, "liblinear", {
            "train": train_path, "test": test_path, "solver": params["solver"], "C": params["C"],
            "eps": a.ll_eps, "prune": a.ll_prune, "budget_s": a.ll_budget,
            "threads": ctx.threads, "labels": keep})
        notes = [f"trained {st['labels_trained']} of {st['labels_with_positives']} labels with a "
                 f"positive (most frequent first)"] if st["labels_trained"] < st[
                     "labels_with_positives"] else []
        if st["budget_hit"]:
            notes.append(f"stopped adding labels after --ll-budget={a.ll_budget:.0f} s")
        return Result(arr["top"], st["train_s"], st["predict_s"], st["model_bytes"] / 1e6,
                      m.rss_mb, notes, {"worker_wall_s": m.wall_s, **st})


class Knn:
    defaults, grid = KNN_DEFAULT, KNN_GRID
    label = "cosine k-NN"

    def fixed(self, ds):
        return None

    def run(self, ctx, ds, train_path, test_path, params, n_test):
        return self.run_ks(ctx, train_path, test_path, [params["k"]])[0]

    def run_ks(self, ctx, train_path, test_path, ks):
        """One worker call ranks with every k of `ks` (the neighbours are found once)."""
        m, st, arr = run_worker(ctx, "knn", {"train": train_path, "test": test_path, "ks": ks})
        return [Result(arr[f"k{k}"], st["train_s"], st["predict_s"], st["model_bytes"] / 1e6,
                       m.rss_mb, [], {"worker_wall_s": m.wall_s}) for k in ks]


class FastText:
    """fastText supervised -loss ova on feature ids written as words (values dropped)."""
    defaults, grid = FT_DEFAULT, FT_GRID
    label = "fastText ova"

    def fixed(self, ds):
        return BIG_FT if ds.big else None

    def fallback(self, params, error):
        """fastText stops with 'Encountered NaN' when lr is too large: halve it, twice at most."""
        if "NaN" in error and params["lr"] / 2 >= FT_DEFAULT["lr"]:
            return dict(params, lr=params["lr"] / 2)
        return None

    def text(self, ctx, ds, path, with_labels):
        key = ("ft", path, with_labels)
        if key not in ds.cache:
            src = {ds.fit_path: ds.fit, ds.val_path: ds.val, ds.train_path: ds.train,
                   ds.test_path: ds.test}[path]
            ds.cache[key] = os.path.join(ctx.tmp, f"{ds.name}.ft.{len(ds.cache)}.txt")
            write_fasttext(ds.cache[key], src, with_labels)
        return ds.cache[key]

    def run(self, ctx, ds, train_path, test_path, params, n_test):
        model = os.path.join(tempfile.mkdtemp(dir=ctx.tmp), "model")
        t = run_measured(["fasttext", "supervised", "-input", self.text(ctx, ds, train_path, True),
                          "-output", model, "-loss", "ova", "-thread", str(ctx.threads),
                          "-lr", str(params["lr"]), "-epoch", str(params["epoch"]),
                          "-dim", str(params["dim"]), "-seed", "1", "-verbose", "0"],
                         ctx.env, ctx.timeout)
        p = run_measured(["fasttext", "predict-prob", model + ".bin",
                          self.text(ctx, ds, test_path, False), str(TOPK)], ctx.env, ctx.timeout)
        top = parse_fasttext(p.stdout, n_test)
        res = Result(top, t.wall_s, p.wall_s, path_mb(model + ".bin"), max(t.rss_mb, p.rss_mb))
        shutil.rmtree(os.path.dirname(model))
        return res


def write_fasttext(path, data, with_labels):
    """One line a row: '__label__L ... fI fJ ...'; fastText reads words, so values are lost."""
    X, Y = data.X, data.Y
    with open(path, "w") as f:
        for r in range(X.shape[0]):
            labs = Y.indices[Y.indptr[r]:Y.indptr[r + 1]] if with_labels else []
            words = [f"__label__{l}" for l in labs]
            words += [f"f{i}" for i in X.indices[X.indptr[r]:X.indptr[r + 1]]]
            f.write(" ".join(words) + "\n")


def parse_fasttext(stdout, n_rows):
    """predict-prob prints '__label__L p ...' per input line (an empty line for no words)."""
    lines = stdout.split("\n")
    top = np.full((n_rows, TOPK), -1, dtype=np.int64)
    for r in range(n_rows):
        toks = lines[r].split() if r < len(lines) else []
        labs = [int(t[len("__label__"):]) for t in toks[0::2]][:TOPK]
        top[r, :len(labs)] = labs
    return top


class Hetsgd:
    """hetsgd train (its defaults plus one variant's flags) then hetsgd predict."""
    label = "hetsgd"

    def __init__(self, flags):
        self.flags = shlex.split(flags)
        self.label = "hetsgd " + (flags if flags.strip() else "(defaults)")

    def run(self, ctx, ds, train_path, test_path, params, n_test):
        model = os.path.join(tempfile.mkdtemp(dir=ctx.tmp), "model.bin")
        t = run_measured([ctx.args.hetsgd, "train", f"--train={train_path}",
                          f"--test={test_path}", "--json", "-o", model] + self.flags,
                         ctx.env, ctx.timeout)
        record = last_json(t.stdout)
        pred = model + ".pred"
        p = run_measured([ctx.args.hetsgd, "predict", "-m", model, "-d", test_path,
                          "-k", str(TOPK), "-o", pred, "-q"], ctx.env, ctx.timeout)
        top = parse_topk_lines(pred, n_test)
        res = Result(top, t.wall_s, p.wall_s, path_mb(model), max(t.rss_mb, p.rss_mb),
                     extra={"record": record})
        shutil.rmtree(os.path.dirname(model))
        return res


def last_json(stdout):
    for line in reversed(stdout.strip().splitlines()):
        if line.strip().startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no JSON record on stdout:\n{stdout[-2000:]}")


PEER_CLASSES = {"plt": NapkinXC, "ova": NapkinOVA, "liblinear": Liblinear,
                "fasttext": FastText, "knn": Knn}


# --------------------------------------------------------------------------------------------
# Tuning and the per-data-set loop


def tune(peer, ctx, ds):
    """(chosen params, validation trials, note): the grid point with the best val P@1+3+5."""
    fixed = peer.fixed(ds)
    if fixed is not None:
        return fixed, [], f"not tuned (more than {ctx.args.big_labels} labels): fixed settings"
    if not ctx.args.tune:
        return peer.defaults, [], "--no-tune: defaults"
    grid = peer.grid
    if isinstance(peer, Knn):
        results = peer.run_ks(ctx, ds.fit_path, ds.val_path, [g["k"] for g in grid])
    else:
        results = [try_run(peer, ctx, ds, g) for g in grid]
    trials = []
    for g, res in zip(grid, results):
        if isinstance(res, Exception):  # e.g. fastText diverging at a large lr: not a candidate
            trials.append({"params": g, "error": str(res).splitlines()[-1], "val_sum": -1.0})
            log(f"    val {fmt_params(g)}: failed ({trials[-1]['error']})")
            continue
        m = ranking_metrics(res.top, ds.val.Y, ds.inv_prop)
        trials.append({"params": g, "val_p1": m["p1"], "val_p3": m["p3"], "val_p5": m["p5"],
                       "val_sum": val_objective(m), "train_s": res.train_s})
        log(f"    val {fmt_params(g)}: P@1+3+5 {val_objective(m):.4f} ({res.train_s:.1f} s)")
    best = max(trials, key=lambda t: t["val_sum"])
    return best["params"], trials, "tuned on validation"


def try_run(peer, ctx, ds, params):
    try:
        return peer.run(ctx, ds, ds.fit_path, ds.val_path, params, ds.val.rows)
    except RuntimeError as e:
        return e


def final_entry(ctx, ds, label, peer, params, trials, how, tune_s):
    notes = []
    while True:
        try:
            res = peer.run(ctx, ds, ds.train_path, ds.test_path, params, ds.test.rows)
            break
        except RuntimeError as e:
            retry = getattr(peer, "fallback", lambda p, e: None)(params, str(e))
            if retry is None:
                raise
            notes.append(f"{fmt_params(params)} failed ({str(e).splitlines()[-1]}); "
                         f"rerun with {fmt_params(retry)}")
            params = retry
    m = ranking_metrics(res.top, ds.test.Y, ds.inv_prop)
    entry = {"method": label, "params": params, "how": how, "tuning_s": tune_s,
             "val_trials": trials, **m, "train_s": res.train_s, "predict_s": res.predict_s,
             "model_mb": res.model_mb, "peak_rss_mb": res.rss_mb, "notes": notes + res.notes,
             "extra": res.extra}
    log(f"  {label} [{fmt_params(params)}]: P@1 {m['p1']:.4f} P@3 {m['p3']:.4f} "
        f"P@5 {m['p5']:.4f} PSP@5 {m['psp5']:.4f} train {res.train_s:.1f} s "
        f"predict {res.predict_s:.1f} s")
    return entry


def bench_peer(ctx, ds, name):
    """The entries of one peer: tuned final model (and PLT's untuned defaults beside it)."""
    peer = PEER_CLASSES[name]()
    t0 = time.perf_counter()
    params, trials, how = tune(peer, ctx, ds)
    tune_s = time.perf_counter() - t0
    entries = [final_entry(ctx, ds, peer.label, peer, params, trials, how, tune_s)]
    if name == "ova" and ds.ovr_keep is not None:
        entries[0]["notes"].append(f"trained on the {int(ds.ovr_keep.sum())} most frequent "
                                   f"labels only (--ovr-max-labels)")
    if name == "plt" and ctx.args.tune and params != PLT_DEFAULT:
        entries.append(final_entry(ctx, ds, peer.label + " (defaults)", peer, PLT_DEFAULT, [],
                                   "untuned defaults", 0.0))
    elif name == "plt" and ctx.args.tune:
        entries[0]["notes"].append("the tuned choice is napkinXC's default")
    return entries


# A flag that only switches off what a run's record shows was not used leaves that run's model
# unchanged: at 22,912 labels --forest=auto grows no forest, so "--forest=off" would repeat the
# defaults' 10+ minute run for nothing.
NOOP_IF = {"--forest=off": lambda r: r.get("forest_weight") == 0 and "forest_trees" not in r,
           "--tail-weight=0": lambda r: r.get("tail_weight") == 0 and "tail_weight_grid" not in r}


def bench_hetsgd(ctx, ds):
    done = []  # (flag set, entry) of the variants run so far
    for flags in ctx.args.hetsgd_variants:
        same = next((e for f, e in done if same_model(set(shlex.split(flags)), f, e)), None)
        if same is not None:
            entry = dict(same, method=Hetsgd(flags).label, params={"flags": flags},
                         notes=[f"not rerun: same model as '{same['method']}' here (its record "
                                f"shows the flags' parts unused); numbers copied"])
        else:
            log(f" {ds.name}: hetsgd {flags}")
            entry = hetsgd_entry(ctx, ds, flags)
        done.append((set(shlex.split(flags)), entry))
        yield entry


def same_model(flags, earlier_flags, earlier):
    extra = flags - earlier_flags
    return ("error" not in earlier and earlier_flags <= flags and
            all(f in NOOP_IF and NOOP_IF[f](earlier["extra"]["record"]) for f in extra))


def hetsgd_entry(ctx, ds, flags):
    peer = Hetsgd(flags)
    try:
        entry = final_entry(ctx, ds, peer.label, peer, {"flags": flags}, [],
                            "its own validation split", 0.0)
    except (RuntimeError, PeerTimeout) as e:
        log(f"  hetsgd {flags} failed: {e}")
        return {"method": peer.label, "error": str(e)}
    rec = entry["extra"]["record"]
    for key in ("p1", "p3", "p5", "psp1", "psp3", "psp5"):
        if key in rec and abs(rec[key] - entry[key]) > 2e-3:
            entry["notes"].append(f"its own {key} {rec[key]:.4f} differs from ours "
                                  f"{entry[key]:.4f} (it evaluates {rec.get('final_eval', '?')},"
                                  f" {rec.get('final_eval_rows', '?')} rows)")
    entry["notes"].append(f"train s includes its test evaluation; its train_time_s "
                          f"{rec.get('train_time_s', float('nan')):.1f}, epochs "
                          f"{rec.get('epochs', '?')}, forest weight {rec.get('forest_weight')}, "
                          f"tail weight {rec.get('tail_weight')}")
    return entry


def bench_dataset(ctx, name, folder):
    if not all(os.path.exists(os.path.join(folder, f)) for f in ("train.txt", "test.txt")):
        log(f"{name}: no train.txt/test.txt under {folder}: skipped")
        return
    log(f"{name}: loading")
    ds = load_dataset(name, folder, ctx.args, ctx.tmp)
    out = {"name": name, "shape": shape_of(ds), "entries": []}
    ctx.results.append(out)
    for peer in ctx.args.peers:
        if peer == "hetsgd":
            for entry in bench_hetsgd(ctx, ds):
                out["entries"].append(entry)
                save_report(ctx, "running")
            continue
        log(f" {name}: {peer}")
        try:
            out["entries"] += bench_peer(ctx, ds, peer)
        except (RuntimeError, PeerTimeout) as e:
            log(f"  {peer} failed: {e}")
            out["entries"].append({"method": PEER_CLASSES[peer].label, "error": str(e)})
        # Written after every peer: a run stopped halfway keeps what it measured.
        save_report(ctx, "running")


def shape_of(ds):
    return {"train_rows": ds.train.rows, "test_rows": ds.test.rows,
            "features": ds.train.X.shape[1], "labels": ds.train.Y.shape[1],
            "val_rows": ds.val.rows, "fit_rows": ds.fit.rows,
            "labels_per_row": float(ds.train.Y.nnz / ds.train.rows),
            "ovr_labels": None if ds.ovr_keep is None else int(ds.ovr_keep.sum()), "big": ds.big}


# --------------------------------------------------------------------------------------------
# Workers (run in a child process by run_worker so that wait4 measures them alone)


def worker_main(name, params):
    fn = {"knn": worker_knn, "liblinear": worker_liblinear}[name]
    stats, arrays = fn(params)
    np.savez(params["out"] + ".npz", **arrays)
    with open(params["out"] + ".json", "w") as f:
        json.dump(stats, f)


def worker_knn(p):
    t0 = time.perf_counter()
    train = read_xc(p["train"])
    Xtr = normalise_rows(train.X)
    Xtr_t = Xtr.T.tocsr()
    t1 = time.perf_counter()
    test = read_xc(p["test"])
    Xte = normalise_rows(test.X)
    ks = sorted(p["ks"])
    tops = {k: [] for k in ks}
    for lo in range(0, Xte.shape[0], 1024):
        sims = (Xte[lo:lo + 1024] @ Xtr_t).toarray()
        for k, top in knn_block(sims, train.Y, ks).items():
            tops[k].append(top)
    t2 = time.perf_counter()
    model_bytes = sum(a.nbytes for m in (Xtr, train.Y) for a in (m.data, m.indices, m.indptr))
    stats = {"train_s": t1 - t0, "predict_s": t2 - t1, "model_bytes": model_bytes}
    return stats, {f"k{k}": np.vstack(tops[k]) for k in ks}


def normalise_rows(X):
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ X, dtype=np.float32)


def knn_block(sims, Y, ks):
    """Top-5 labels of each row for each k: sum of the k nearest rows' similarities."""
    kmax = min(max(ks), sims.shape[1])
    near = np.argpartition(-sims, kmax - 1, axis=1)[:, :kmax]
    near_sims = np.take_along_axis(sims, near, 1)
    order = np.argsort(-near_sims, axis=1)
    near, near_sims = np.take_along_axis(near, order, 1), np.take_along_axis(near_sims, order, 1)
    rows = np.repeat(np.arange(sims.shape[0]), kmax).reshape(-1, kmax)
    out = {}
    for k in ks:
        k = min(k, kmax)
        W = sp.csr_matrix((near_sims[:, :k].ravel(), (rows[:, :k].ravel(), near[:, :k].ravel())),
                          shape=sims.shape)
        scores = (W @ Y).toarray()
        scores[scores <= 0] = -np.inf  # a label no neighbour carries is not predicted
        out[k] = topk_of_scores(scores)
    return out


# LIBLINEAR 2.3 structures (linear.h of liblinear 2.3.0; 2.4 added fields to `parameter`).
class _Node(ctypes.Structure):
    _fields_ = [("index", ctypes.c_int), ("value", ctypes.c_double)]


class _Problem(ctypes.Structure):
    _fields_ = [("l", ctypes.c_int), ("n", ctypes.c_int), ("y", ctypes.POINTER(ctypes.c_double)),
                ("x", ctypes.POINTER(ctypes.POINTER(_Node))), ("bias", ctypes.c_double)]


class _Parameter(ctypes.Structure):
    _fields_ = [("solver_type", ctypes.c_int), ("eps", ctypes.c_double), ("C", ctypes.c_double),
                ("nr_weight", ctypes.c_int), ("weight_label", ctypes.POINTER(ctypes.c_int)),
                ("weight", ctypes.POINTER(ctypes.c_double)), ("p", ctypes.c_double),
                ("init_sol", ctypes.POINTER(ctypes.c_double))]


class _Model(ctypes.Structure):
    _fields_ = [("param", _Parameter), ("nr_class", ctypes.c_int), ("nr_feature", ctypes.c_int),
                ("w", ctypes.POINTER(ctypes.c_double)), ("label", ctypes.POINTER(ctypes.c_int)),
                ("bias", ctypes.c_double)]


_PRINT = ctypes.CFUNCTYPE(None, ctypes.c_char_p)
_QUIET = _PRINT(lambda s: None)  # module-level: the library keeps the pointer


def load_liblinear():
    lib = ctypes.CDLL("liblinear.so.4")
    lib.train.restype = ctypes.POINTER(_Model)
    lib.train.argtypes = [ctypes.POINTER(_Problem), ctypes.POINTER(_Parameter)]
    lib.free_and_destroy_model.argtypes = [ctypes.POINTER(ctypes.POINTER(_Model))]
    lib.check_parameter.restype = ctypes.c_char_p
    lib.set_print_string_function(_QUIET)
    return lib


def liblinear_nodes(X):
    """X's rows as LIBLINEAR feature_node lists: 1-based features, bias node (n+1), -1 end.

    Returns the node array (kept alive by the caller) and a row-pointer array into it."""
    n, d = X.shape
    per_row = np.diff(X.indptr)
    starts = X.indptr[:-1] + 2 * np.arange(n)
    nodes = np.zeros(X.nnz + 2 * n, dtype=np.dtype([("index", np.int32), ("value", np.float64)],
                                                   align=True))
    assert nodes.itemsize == ctypes.sizeof(_Node)
    within = np.arange(X.nnz) - np.repeat(X.indptr[:-1], per_row)
    pos = np.repeat(starts, per_row) + within
    nodes["index"][pos], nodes["value"][pos] = X.indices + 1, X.data
    nodes["index"][starts + per_row], nodes["value"][starts + per_row] = d + 1, 1.0
    nodes["index"][starts + per_row + 1] = -1
    ptrs = (nodes.ctypes.data + nodes.itemsize * starts).astype(np.uintp)
    return nodes, ptrs


class _LabelTrainer:
    """Trains binary problems (label l against the rest) on shared rows; one per thread."""

    def __init__(self, lib, ptrs, n_features, solver, C, eps):
        self.lib, self.d = lib, n_features
        self.y = np.empty(len(ptrs))
        x = ctypes.cast(ptrs.ctypes.data, ctypes.POINTER(ctypes.POINTER(_Node)))
        self.prob = _Problem(len(ptrs), n_features + 1,
                             self.y.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), x, 1.0)
        self.param = _Parameter(solver, eps, C, 0, None, None, 0.1, None)
        err = lib.check_parameter(ctypes.byref(self.prob), ctypes.byref(self.param))
        if err:
            raise RuntimeError(f"LIBLINEAR: {err.decode()}")

    def weights(self, positives):
        """w (features + bias) of one label, its sign made 'positive class'."""
        self.y[:] = -1.0
        self.y[positives] = 1.0
        m = self.lib.train(ctypes.byref(self.prob), ctypes.byref(self.param))
        w = np.ctypeslib.as_array(m.contents.w, (self.d + 1,)).copy()
        # For two classes LIBLINEAR's w scores label[0], the class of the first row.
        if m.contents.label[0] != 1:
            w = -w
        self.lib.free_and_destroy_model(ctypes.byref(m))
        return w


def worker_liblinear(p):
    t0 = time.perf_counter()
    train = read_xc(p["train"])
    lib = load_liblinear()
    nodes, ptrs = liblinear_nodes(train.X)
    Yc = train.Y.tocsc()
    counts = np.diff(Yc.indptr)
    todo = [int(l) for l in np.argsort(-counts, kind="stable") if counts[l] > 0]
    n_pos_labels = len(todo)
    if p["labels"] is not None:
        allowed = set(p["labels"])
        todo = [l for l in todo if l in allowed]
    W, budget_hit = train_labels(lib, ptrs, train, Yc, todo, p)
    t1 = time.perf_counter()
    test = read_xc(p["test"])
    top = score_linear(test.X, W)
    t2 = time.perf_counter()
    del nodes
    stats = {"train_s": t1 - t0, "predict_s": t2 - t1, "labels_trained": W.trained,
             "labels_with_positives": n_pos_labels, "budget_hit": budget_hit,
             "model_bytes": W.nbytes, "weights_kept": int(W.M.nnz)}
    return stats, {"top": top}


@dataclass
class _Weights:
    M: sp.csr_matrix     # (features + 1) x labels, bias last
    trained_mask: np.ndarray
    trained: int
    nbytes: int


def train_labels(lib, ptrs, train, Yc, todo, p):
    """Labels of `todo` in order, --threads at a time, until done or the budget is spent."""
    d, L = train.X.shape[1], train.Y.shape[1]
    deadline = time.perf_counter() + p["budget_s"] if p["budget_s"] > 0 else float("inf")
    it, lock, cols = iter(todo), threading.Lock(), {}

    def loop():
        # ctypes drops the GIL during train(), so the threads' solvers run in parallel.
        trainer = _LabelTrainer(lib, ptrs, d, p["solver"], p["C"], p["eps"])
        while time.perf_counter() < deadline:
            with lock:
                l = next(it, None)
            if l is None:
                return
            w = trainer.weights(Yc.indices[Yc.indptr[l]:Yc.indptr[l + 1]])
            keep = np.flatnonzero(np.abs(w) >= p["prune"])
            cols[l] = (keep, w[keep])

    with concurrent.futures.ThreadPoolExecutor(p["threads"]) as ex:
        for f in [ex.submit(loop) for _ in range(p["threads"])]:
            f.result()
    return assemble_weights(cols, d, L), len(cols) < len(todo)


def assemble_weights(cols, d, L):
    """The trained labels' kept weights as one (features + 1) x labels CSR matrix."""
    labels = sorted(cols)
    rows = np.concatenate([cols[l][0] for l in labels] + [np.zeros(0, np.int64)])
    vals = np.concatenate([cols[l][1] for l in labels] + [np.zeros(0)])
    owner = np.repeat(np.array(labels, np.int64), [len(cols[l][0]) for l in labels])
    M = sp.csr_matrix((vals.astype(np.float32), (rows, owner)), shape=(d + 1, L))
    mask = np.zeros(L, bool)
    mask[labels] = True
    return _Weights(M, mask, len(labels), M.data.nbytes + M.indices.nbytes + M.indptr.nbytes)


def score_linear(X, W):
    """Top-5 labels by w_l . [x, 1]; labels without a model are never predicted."""
    Xb = sp.hstack([X, np.ones((X.shape[0], 1), np.float32)], format="csr")
    tops = []
    for lo in range(0, Xb.shape[0], 1024):
        scores = (Xb[lo:lo + 1024] @ W.M).toarray()
        scores[:, ~W.trained_mask] = -np.inf
        tops.append(topk_of_scores(scores))
    return np.vstack(tops)


# --------------------------------------------------------------------------------------------
# Report


def fmt_params(p):
    if "flags" in p:
        return p["flags"] or "defaults"
    names = {"solver": lambda v: f"-s {v} ({LL_SOLVERS.get(v, v)})"}
    return ", ".join(names[k](v) if k in names else f"{k}={v:g}" for k, v in p.items())


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def dataset_table(d):
    s = d["shape"]
    lines = [f"### {d['name']}", "",
             f"train {s['train_rows']} rows (tuning: fit {s['fit_rows']} / validation "
             f"{s['val_rows']}), test {s['test_rows']} rows, {s['features']} features, "
             f"{s['labels']} labels, {s['labels_per_row']:.2f} labels/row", "",
             "| method | hyper-parameters | P@1 | P@3 | P@5 | PSP@1 | PSP@3 | PSP@5 | train s "
             "| predict s | model MB | peak RSS MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for e in d["entries"]:
        if "error" in e:
            lines.append(f"| {e['method']} | failed | " + " | ".join(["-"] * 10) + " |")
            notes.append(f"{e['method']}: {e['error'].splitlines()[0]}")
            continue
        how = "" if e["how"] in ("tuned on validation", "its own validation split") else \
            f" ({e['how'].split(':')[0]})"
        cells = [e["method"], fmt_params(e["params"]) + how] + \
            [fmt(e[k], ".4f") for k in ("p1", "p3", "p5", "psp1", "psp3", "psp5")] + \
            [fmt(e["train_s"], ".1f"), fmt(e["predict_s"], ".1f"), fmt(e["model_mb"], ".1f"),
             fmt(e["peak_rss_mb"], ".0f")]
        lines.append("| " + " | ".join(cells) + " |")
        notes += [f"{e['method']}: {n}" for n in e["notes"]]
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def header(args, start, wall, coretype_note, status):
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    model = "unknown"
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    opts = {k: v for k, v in vars(args).items() if k not in ("worker", "worker_args")}
    return "\n".join([
        "# hetsgd beside napkinXC, LIBLINEAR, fastText and k-NN on real data", "",
        f"- command: `{shlex.join([sys.executable] + sys.argv)}`",
        f"- commit: {commit}; date: {start.isoformat(timespec='seconds')}; "
        f"whole run {wall / 60:.1f} min ({status})",
        f"- hardware: {model}, {os.cpu_count()} CPUs; {coretype_note}",
        f"- options: `{json.dumps(opts)}`",
        "- metrics on the test file; hyper-parameters chosen on a validation split of the "
        "training file (P@1+P@3+P@5); PSP with A=%g B=%g; times are wall seconds of the "
        "commands (data loading included), tuning excluded" % (args.psp_a, args.psp_b), ""])


# --------------------------------------------------------------------------------------------
# Main


def default_data_root():
    for root in ("/work/shared/datasets", os.path.join(REPO, "..", "shared", "datasets")):
        if os.path.isdir(root):
            return os.path.abspath(root)
    return "/work/shared/datasets"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="bibtex,delicious,debian-deps")
    ap.add_argument("--data-root", default=default_data_root())
    ap.add_argument("--hetsgd", default=os.path.join(REPO, "build", "apps", "hetsgd"))
    ap.add_argument("--hetsgd-variants", default=DEFAULT_VARIANTS,
                    help="';'-separated flag lists for hetsgd train ('' = its defaults)")
    ap.add_argument("--peers", default=",".join(ALL_PEERS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--val-fraction", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1, help="of the validation split")
    ap.add_argument("--no-tune", dest="tune", action="store_false", help="peers' defaults")
    ap.add_argument("--psp-a", type=float, default=0.55)
    ap.add_argument("--psp-b", type=float, default=1.5)
    ap.add_argument("--big-labels", type=int, default=5000,
                    help="above this many labels ova, liblinear and fasttext are not tuned")
    ap.add_argument("--ovr-max-labels", type=int, default=0,
                    help="ova and liblinear train only this many most frequent labels (0 = all)")
    ap.add_argument("--ll-budget", type=float, default=1200.0,
                    help="LIBLINEAR: seconds of training after which no label is started")
    ap.add_argument("--ll-eps", type=float, default=0.1)
    ap.add_argument("--ll-prune", type=float, default=0.01,
                    help="LIBLINEAR weights below this magnitude are dropped")
    ap.add_argument("--peer-timeout", type=float, default=3600.0,
                    help="seconds after which one command of a peer is killed")
    ap.add_argument("--napkinxc-src",
                    default=os.path.normpath(os.path.join(REPO, "..", "shared", "peers", "napkinXC")))
    ap.add_argument("--napkinxc-build", default="/tmp/napkinxc-build")
    ap.add_argument("--out", default="/tmp/bench_real/results.md")
    ap.add_argument("--openblas-coretype", default="auto",
                    help="auto (bench_cpu.py's detection), none, or a core name")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-args", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.peers = [p for p in args.peers.split(",") if p]
    unknown = set(args.peers) - set(ALL_PEERS)
    if unknown:
        ap.error(f"unknown peers {sorted(unknown)}; known: {ALL_PEERS}")
    args.hetsgd_variants = [v.strip() for v in args.hetsgd_variants.split(";")]
    return args


def ensure_napkinxc(args):
    nxc = os.path.join(args.napkinxc_build, "nxc")
    if not os.path.exists(nxc):
        log(f"building napkinXC from {args.napkinxc_src} into {args.napkinxc_build}")
        subprocess.run(["cmake", "-S", args.napkinxc_src, "-B", args.napkinxc_build,
                        "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", args.napkinxc_build, "-j", str(args.threads)],
                       check=True, stdout=subprocess.DEVNULL)
    return nxc


def check_tools(args):
    """Drops (with a message) the peers whose program is missing."""
    need = {"fasttext": shutil.which("fasttext"), "hetsgd": os.path.exists(args.hetsgd)}
    if "liblinear" in args.peers:
        try:
            ctypes.CDLL("liblinear.so.4")
            need["liblinear"] = True
        except OSError:
            need["liblinear"] = False
    for p, ok in need.items():
        if p in args.peers and not ok:
            log(f"{p}: not found (fasttext/liblinear: apt-get install fasttext liblinear-tools; "
                f"hetsgd: --hetsgd): skipped")
            args.peers.remove(p)


def make_env(args):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads))
    core, note = bench_cpu.choose_coretype(args.openblas_coretype, sys.executable)
    if core:
        env["OPENBLAS_CORETYPE"] = core
    return env, note


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def save_report(ctx, status):
    """Writes the Markdown report and the JSON file as they stand; returns the Markdown."""
    wall = time.perf_counter() - ctx.t0
    head = header(ctx.args, ctx.start, wall, ctx.core_note, status)
    text = head + "\n" + "\n".join(map(dataset_table, ctx.results))
    out = ctx.args.out
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    with open(os.path.splitext(out)[0] + ".json", "w") as f:
        json.dump({"header": head, "status": status, "wall_s": wall, "datasets": ctx.results},
                  f, indent=1, default=json_default)
    return text


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker_main(args.worker, json.loads(args.worker_args))
    signal.signal(signal.SIGTERM, on_sigterm)
    check_tools(args)
    env, core_note = make_env(args)
    ctx = Ctx(args, env, args.threads, args.peer_timeout, core_note)
    status = "complete"
    try:
        with tempfile.TemporaryDirectory(prefix="bench_real.") as ctx.tmp:
            if {"plt", "ova"} & set(args.peers):
                ctx.nxc = ensure_napkinxc(args)
            for name in (d for d in args.datasets.split(",") if d):
                bench_dataset(ctx, name, os.path.join(args.data_root, name))
    except (Interrupted, KeyboardInterrupt) as e:
        status = f"INTERRUPTED ({e or 'Ctrl-C'}): only the entries below were measured"
        log(status)
    print(save_report(ctx, status))
    return 0 if status == "complete" else 1


def json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


if __name__ == "__main__":
    sys.exit(main())
