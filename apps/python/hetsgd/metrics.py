"""Ranking metrics of the Extreme Classification Repository, computed by hetsgd's C++ metrics
(core/metrics.cpp: the code that scores the engine's evaluations and ``hetsgd eval``).

Predictions are either an int32 array of top-k label ids per row (best first; ``-1`` pads
short rows), as :meth:`hetsgd.Model.predict` returns them, or a scipy.sparse score matrix
(rows x labels, pyxclib's layout), whose top-k entries per row are taken. Truth is a
scipy.sparse label matrix (non-zero entries are labels). ``k`` is 1..5.
"""

import numpy as np
import scipy.sparse as sp

from . import _hetsgd as _core
from ._data import _csr
from ._errors import InvalidArgument

__all__ = ["precision", "ndcg", "recall", "psp", "psndcg", "inverse_propensity", "ranking"]


def _topk(pred, k, num_labels):
    if sp.issparse(pred):
        m = _csr(pred, "predictions")
        if m.shape[1] != num_labels:
            raise InvalidArgument(
                f"predictions have {m.shape[1]} columns, the truth {num_labels} labels")
        out = np.full((m.shape[0], k), -1, dtype=np.int32)
        for r in range(m.shape[0]):
            lo, hi = m.indptr[r], m.indptr[r + 1]
            if hi > lo:
                # Highest score first; ties by the lower label id, as the engine's top-k.
                order = np.lexsort((m.indices[lo:hi], -m.data[lo:hi]))[:k]
                out[r, :len(order)] = m.indices[lo:hi][order]
        return out
    a = np.asarray(pred)
    if a.ndim != 2:
        raise InvalidArgument(f"predicted labels have {a.ndim} dimensions, expected 2 (rows x k)")
    if not np.issubdtype(a.dtype, np.integer):
        raise InvalidArgument(f"predicted labels have dtype {a.dtype}: expected integers")
    if a.size and (a.max() >= num_labels or a.min() < -1):
        bad = a.max() if a.max() >= num_labels else a.min()
        raise InvalidArgument(f"predicted label {bad} outside [-1, {num_labels})")
    return np.ascontiguousarray(a[:, :k], dtype=np.int32)


def _truth(Y):
    Y = _csr(Y, "truth")
    if Y.nnz and not np.all(Y.data != 0):
        Y = Y.copy()
        Y.eliminate_zeros()
    empty = np.zeros(Y.shape[0] + 1, dtype=np.int64)
    return _core.dataset_from_csr(empty, np.zeros(0, np.int32), np.zeros(0, np.float32), 1,
                                  np.ascontiguousarray(Y.indptr),
                                  np.ascontiguousarray(Y.indices), max(Y.shape[1], 1), "truth")


def _check_k(k):
    if not isinstance(k, (int, np.integer)) or not 1 <= k <= 5:
        raise InvalidArgument(f"k = {k} outside [1, 5]")
    return int(k)


def inverse_propensity(Y_train, a=0.55, b=1.5):
    """Inverse propensities 1/p_l of every label from the training labels ``Y_train``
    (Jain et al. 2016; A=0.55, B=1.5 by default; Amazon: 0.6/2.6, Wikipedia: 0.5/0.4)."""
    return _core.inverse_propensities(_truth(Y_train), float(a), float(b))


def ranking(Y_true, pred, k=5, propensity=None):
    """Every metric at 1..5 in one pass: ``{"precision": [P@1..P@5], "ndcg": [...],
    "recall": [...], "psp": [...], "psndcg": [...]}`` (PS metrics with ``propensity``)."""
    Y = _truth(Y_true)
    kk = max(5, k)
    inv = None
    if propensity is not None:
        inv = np.ascontiguousarray(propensity, dtype=np.float32)
        if inv.ndim != 1 or inv.shape[0] < Y.num_labels:
            raise InvalidArgument(
                f"propensity has shape {inv.shape}: expected ({Y.num_labels},)")
    return _core.ranking_metrics(Y, _topk(pred, kk, Y.num_labels), inv)


def precision(Y_true, pred, k=5):
    """P@k = |top-k ∩ y| / k, averaged over rows."""
    return ranking(Y_true, pred, _check_k(k))["precision"][k - 1]


def ndcg(Y_true, pred, k=5):
    """nDCG@k with IDCG over min(k, |y|) labels, averaged over rows."""
    return ranking(Y_true, pred, _check_k(k))["ndcg"][k - 1]


def recall(Y_true, pred, k=5):
    """recall@k = |top-k ∩ y| / |y|, averaged over rows."""
    return ranking(Y_true, pred, _check_k(k))["recall"][k - 1]


def psp(Y_true, pred, k=5, propensity=None):
    """PSP@k with ``propensity`` = :func:`inverse_propensity` of the training labels."""
    if propensity is None:
        raise InvalidArgument("psp needs propensity=hetsgd.metrics.inverse_propensity(Y_train)")
    return ranking(Y_true, pred, _check_k(k), propensity)["psp"][k - 1]


def psndcg(Y_true, pred, k=5, propensity=None):
    """PSnDCG@k with ``propensity`` = :func:`inverse_propensity` of the training labels."""
    if propensity is None:
        raise InvalidArgument(
            "psndcg needs propensity=hetsgd.metrics.inverse_propensity(Y_train)")
    return ranking(Y_true, pred, _check_k(k), propensity)["psndcg"][k - 1]
