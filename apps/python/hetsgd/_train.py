"""train() and compare(): the command line's options, from Python."""

import json
import sys

from . import _hetsgd as _core
from ._data import pair, to_dataset
from ._errors import TrainingInterrupted
from ._model import Model


def options_to_argv(options):
    """``{"lr": 0.01, "keep_best": False, "hidden": [512, 256]}`` -> the command line's
    ``["--lr=0.01", "--keep-best=false", "--hidden=512,256"]`` (None values are left out)."""
    argv = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        elif isinstance(value, float):
            value = repr(value)
        argv.append(f"{flag}={value}")
    return argv


class _Progress:
    """Calls ``callback(record)`` per evaluation and draws a tqdm bar over the epochs (or the
    time budget) when ``progress`` is true and tqdm is installed."""

    def __init__(self, callback, progress, options):
        self.callback = callback
        self.bar = None
        if progress:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                # epochs="auto" (the default's own value) has no total to draw against.
                epochs = options.get("epochs")
                self.epochs = float(epochs) if epochs not in (None, "auto") else 0.0
                total = self.epochs or float(options.get("time_budget") or 0) or None
                unit = "epoch" if self.epochs else "s"
                self.bar = tqdm(total=total, unit=unit, file=sys.stderr, leave=True)

    def __call__(self, algo, text):
        record = json.loads(text)
        record["algo"] = algo
        if self.bar is not None:
            done = record["epoch"] if self.epochs else record["time_s"]
            self.bar.n = round(done if self.bar.total is None else min(done, self.bar.total), 2)
            post = {"algo": algo, "P@1": f"{record['p1']:.4f}"}
            if "val" in record:
                post["val P@1"] = f"{record['val']['p1']:.4f}"
            self.bar.set_postfix(post, refresh=False)
            self.bar.refresh()
        if self.callback is not None:
            self.callback(record)

    def close(self):
        if self.bar is not None:
            self.bar.close()

    def wanted(self):
        return self.bar is not None or self.callback is not None


def _inputs(X, Y, test, val):
    train_ds = to_dataset(X, Y, "train")
    hint = (train_ds.num_features, train_ds.num_labels)
    return train_ds, pair(test, "test", *hint), pair(val, "val", *hint)


def train(X, Y=None, *, test=None, val=None, callback=None, progress=True, **options):
    """Trains a model, as ``hetsgd train`` does, and returns a :class:`Model`.

    ``X``, ``Y``: scipy.sparse features (float32) and labels of the training set, or ``X`` a
    data file (XC, LIBSVM or cache) and ``Y`` None. ``test``: ``(X, Y)`` or a file, evaluated
    and reported (default: the training set, as without ``--test``). ``val``: ``(X, Y)`` or a
    file used for every selection (keep-best, patience, stopping at the target); without it
    ``val_fraction`` of the training rows is held out (default a tenth, at most 2,000 rows), as on
    the command line.

    ``options`` are ``hetsgd train``'s options by the same names with ``_`` for ``-``
    (``lr=1e-3, epochs=5, hidden=[512], devices="cpu:0,cpu:1", threads=2, algo="sync",
    keep_best=False, ...``), checked by the same parser: an unknown name or a value out of
    range raises :class:`hetsgd.UsageError` with the command line's message.

    ``callback(record)`` is called after every evaluation (``record``: time_s, epoch, p1..p5,
    ndcg1..5, val, algo, ...); an exception it raises stops the run and propagates.
    ``progress``: a tqdm bar when tqdm is installed. The GIL is released while training.
    Ctrl-C stops the run at the next batch boundary and raises
    :class:`hetsgd.TrainingInterrupted` (a KeyboardInterrupt) whose ``model`` is the model
    trained so far.
    """
    argv = options_to_argv(options)
    _core.parse_train_options(argv)  # usage errors before any data is copied
    data = _inputs(X, Y, test, val)
    bar = _Progress(callback, progress, options)
    try:
        core, text, interrupted = _core.train(*data, argv, bar if bar.wanted() else None)
    finally:
        bar.close()
    model = Model(core, json.loads(text))
    if interrupted:
        raise TrainingInterrupted("training interrupted: stopped at a batch boundary",
                                  model=model, result=model.result)
    return model


def compare(X, Y=None, *, test=None, val=None, algos=("adaptive", "sync", "avg"),
            callback=None, progress=True, **options):
    """Runs several algorithms one after another on the same data, devices and budget, as
    ``hetsgd compare`` does (default budget: 5 s each; devices "auto").

    Each algorithm trains and is calibrated as :func:`train` does it (``forest``,
    ``forest_trees``, ``linear``, ``refit``, ``tail_weight`` included), so its metrics are those of the
    model :func:`train` would return. Returns ``{algo: run}`` in ``algos`` order, each run the
    summary of ``hetsgd compare --json`` for that algorithm (the calibration's choices
    included) with its ``curve`` (one record per evaluation: time_s, epoch, p1..p5, ...) and
    ``error`` ("" when it ran). Arguments as for :func:`train`.
    """
    if isinstance(algos, str):
        algos = algos.split(",")
    options = dict(options, algos=list(algos))
    argv = options_to_argv(options)
    _core.parse_train_options(argv, True)
    data = _inputs(X, Y, test, val)
    bar = _Progress(callback, progress, options)
    try:
        text, interrupted = _core.compare(*data, argv, bar if bar.wanted() else None)
    finally:
        bar.close()
    result = json.loads(text)
    runs = {run["algo"]: run for run in result["runs"]}
    if interrupted:
        raise TrainingInterrupted("compare interrupted: stopped at a batch boundary",
                                  result=runs)
    return runs
