"""Model: a trained hetsgd model (prediction, evaluation, the command line's file format)."""

import json
import os

import numpy as np
import scipy.sparse as sp

from . import _hetsgd as _core
from ._data import to_dataset
from ._errors import InvalidArgument


def _whole(name, value, lo, hi):
    """``value`` as an int in [lo, hi]; a float, a bool or a number out of range is refused
    (``k=2.5`` is not silently 2), as the command line refuses it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgument(f"{name}={value!r}: expected a whole number in [{lo}, {hi}]")
    if not lo <= int(value) <= hi:
        raise InvalidArgument(f"{name}={value}: outside [{lo}, {hi}]")
    return int(value)


class Model:
    """A trained model: an MLP from ``num_features`` sparse inputs to ``num_labels`` scores.

    Made by :func:`hetsgd.train` or :func:`hetsgd.load`. ``result`` is the training run's
    summary (the JSON record of ``hetsgd train --json``, plus ``curve``: one record per
    evaluation), None for a loaded model.
    """

    def __init__(self, core, result=None):
        self._core = core
        self.result = result

    num_features = property(lambda self: self._core.num_features, doc="input width d")
    num_labels = property(lambda self: self._core.num_labels, doc="number of labels L")
    hidden = property(lambda self: list(self._core.hidden), doc="hidden layer widths")
    loss = property(lambda self: self._core.loss, doc='"softmax" or "bce"')

    @property
    def curve(self):
        """The evaluations of the training run (time_s, epoch, p1..p5, ndcg1..5, ...)."""
        return [] if self.result is None else self.result["curve"]

    def parameters(self):
        """A copy of every parameter (float32, the model file's order)."""
        return self._core.parameters()

    def predict(self, X, k=5, device="cpu", threads=0):
        """Top-``k`` labels of each row of ``X``, best first.

        ``X``: scipy.sparse features (float32; at most ``num_features`` columns) or a data
        file. Returns ``(labels, scores)``: int32 and float32 arrays of shape (rows, k'),
        k' = min(k, num_labels), as ``hetsgd predict`` prints them. ``device``: "cpu" or
        "cuda:N"; ``threads``: CPU threads (0 = all). The GIL is released while predicting.
        """
        k = _whole("k", k, 1, 1000)
        threads = _whole("threads", threads, 0, 1 << 16)
        ds = to_dataset(X, None, "X", self.num_features, self.num_labels)
        return self._core.predict(ds, k, device, threads)

    def predict_matrix(self, X, k=5, device="cpu", threads=0):
        """The top-``k`` scores as a (rows x num_labels) scipy CSR matrix, pyxclib's score
        matrix layout (what ``xclib.evaluation.xc_metrics`` takes; sorted column ids)."""
        labels, scores = self.predict(X, k, device, threads)
        rows, kk = labels.shape
        indptr = np.arange(0, rows * kk + 1, kk, dtype=np.int64)
        m = sp.csr_matrix((scores.ravel(), labels.ravel(), indptr),
                          shape=(rows, self.num_labels))
        m.sort_indices()
        return m

    def evaluate(self, X, Y=None, k=5, device="cpu", threads=0):
        """P@1..5, nDCG@1..5 and the loss on labelled data, as ``hetsgd eval --json``."""
        k = _whole("k", k, 1, 1000)
        threads = _whole("threads", threads, 0, 1 << 16)
        ds = to_dataset(X, Y, "data", self.num_features, self.num_labels)
        return json.loads(self._core.evaluate(ds, k, device, threads))

    def save(self, path):
        """Writes the model file of ``hetsgd train -o`` (atomically)."""
        self._core.save(os.fsdecode(path))

    def __repr__(self):
        widths = ",".join(str(h) for h in self.hidden)
        return (f"hetsgd.Model(features={self.num_features}, hidden={widths}, "
                f"labels={self.num_labels}, loss={self.loss})")


def load(path):
    """Reads a model file written by ``hetsgd train -o`` or :meth:`Model.save`."""
    return Model(_core.load_model(os.fsdecode(path)))
