"""Inputs of hetsgd: scipy.sparse CSR matrices or files, turned into the engine's Dataset."""

import os

import numpy as np
import scipy.sparse as sp

from . import _hetsgd as _core
from ._errors import InvalidArgument


def _is_path(x):
    return isinstance(x, (str, bytes, os.PathLike))


def _check_offsets(m, what):
    """The offsets of a CSR matrix checked before scipy's own routines read through them
    (scipy trusts them: a bad offset makes sort_indices read out of bounds)."""
    p = np.asarray(m.indptr)
    rows = m.shape[0]
    if p.ndim != 1 or p.shape[0] != rows + 1:
        raise InvalidArgument(f"{what} indptr has shape {p.shape}, expected ({rows + 1},)")
    if not np.issubdtype(p.dtype, np.integer):
        raise InvalidArgument(f"{what} indptr has dtype {p.dtype}: expected int32 or int64")
    if p[0] != 0:
        raise InvalidArgument(f"{what} indptr[0] = {p[0]}, expected 0")
    steps = np.diff(p)
    if steps.size and steps.min() < 0:
        r = int(np.argmin(steps))
        raise InvalidArgument(f"{what} indptr[{r + 1}] = {p[r + 1]} < indptr[{r}] = {p[r]}")
    if p[-1] != m.indices.shape[0] or p[-1] > m.data.shape[0]:
        raise InvalidArgument(f"{what} indptr[{rows}] = {p[-1]}, but there are "
                              f"{m.indices.shape[0]} indices and {m.data.shape[0]} values")


def _csr(m, what):
    """``m`` as a canonical CSR matrix (sorted indices), refusing what cannot be one."""
    if isinstance(m, np.ndarray) or not sp.issparse(m):
        raise InvalidArgument(
            f"{what} is a {type(m).__name__}: expected a scipy.sparse matrix "
            "(scipy.sparse.csr_matrix)")
    if m.ndim != 2:
        raise InvalidArgument(f"{what} has {m.ndim} dimensions, expected 2")
    if m.format != "csr":
        m = m.tocsr()
    _check_offsets(m, what)
    if m.indices.size and m.indices.min() < 0:
        # Before sorting, which would move the entry: name it where the caller put it.
        i = int(np.argmin(m.indices))
        row = int(np.searchsorted(m.indptr, i, side="right")) - 1
        raise InvalidArgument(
            f"{what} indices[{i}] (row {row}) = {m.indices[i]} is negative")
    if not m.has_sorted_indices:
        m = m.sorted_indices()
    return m


def _features(X, what):
    X = _csr(X, what)
    if X.dtype != np.float32:
        raise InvalidArgument(
            f"{what} has dtype {X.dtype}: expected float32 (convert with "
            "X.astype(numpy.float32))")
    return X


def _labels(Y, rows, what):
    Y = _csr(Y, what)
    if Y.shape[0] != rows:
        raise InvalidArgument(f"{what} has {Y.shape[0]} rows, the features {rows}")
    if Y.nnz and np.issubdtype(Y.dtype, np.number) and not np.all(Y.data != 0):
        # Explicit zeros are not labels: the label set of a row is its non-zero entries.
        Y = Y.copy()
        Y.eliminate_zeros()
    return Y


def to_dataset(X, Y=None, what="X", num_features=0, num_labels=0):
    """The engine's Dataset of features ``X`` and labels ``Y``.

    ``X`` is a scipy.sparse matrix (float32 values, int32/int64 indices; CSR is taken as it
    is, other formats are converted) and ``Y`` a sparse matrix of the same rows whose non-zero
    entries are the labels (None: no labels, ``num_labels`` columns); or ``X`` is the path of
    an XC, LIBSVM or cache file (format detected) and ``Y`` is None. ``num_features`` /
    ``num_labels`` give the id spaces of a file without a header (LIBSVM) and the width of
    ``Y=None``. Indices and offsets are checked (negative, out of range, unsorted repeats)
    and values must be finite; the arrays are copied once into the engine.
    """
    if isinstance(X, _core.Dataset):
        return X
    if _is_path(X):
        if Y is not None:
            raise InvalidArgument(f"{what}: a file holds its labels, Y must be None")
        return _core.read_dataset(os.fsdecode(X), int(num_features), int(num_labels))
    X = _features(X, f"{what} features")
    rows, cols = X.shape
    if Y is None:
        if num_labels <= 0:
            raise InvalidArgument(f"{what}: labels are needed (Y is None)")
        y_indptr = np.zeros(rows + 1, dtype=np.int64)
        y_indices = np.zeros(0, dtype=np.int32)
        labels = int(num_labels)
    else:
        Y = _labels(Y, rows, f"{what} labels")
        y_indptr, y_indices, labels = Y.indptr, Y.indices, Y.shape[1]
    return _core.dataset_from_csr(
        np.ascontiguousarray(X.indptr), np.ascontiguousarray(X.indices),
        np.ascontiguousarray(X.data), max(int(cols), int(num_features), 1),
        np.ascontiguousarray(y_indptr), np.ascontiguousarray(y_indices), int(labels), what)


def pair(data, what, num_features=0, num_labels=0):
    """A (X, Y) tuple, a path or a Dataset as a Dataset (None stays None)."""
    if data is None:
        return None
    if isinstance(data, tuple):
        if len(data) != 2:
            raise InvalidArgument(f"{what}: expected (X, Y), got a tuple of {len(data)}")
        return to_dataset(data[0], data[1], what, num_features, num_labels)
    return to_dataset(data, None, what, num_features, num_labels)


def to_scipy(ds):
    """(X, Y) scipy CSR matrices of a Dataset (X float32, Y float32 ones)."""
    a = ds.arrays()
    X = sp.csr_matrix((a["x_data"], a["x_indices"], a["x_indptr"]),
                      shape=(ds.rows, ds.num_features))
    ones = np.ones(len(a["y_indices"]), dtype=np.float32)
    Y = sp.csr_matrix((ones, a["y_indices"], a["y_indptr"]), shape=(ds.rows, ds.num_labels))
    return X, Y


def read(path, num_features=0, num_labels=0):
    """Reads an XC, LIBSVM or binary cache file (format detected as the command line does)
    and returns ``(X, Y)``: scipy CSR features (float32) and labels (float32 ones)."""
    return to_scipy(_core.read_dataset(os.fsdecode(path), int(num_features), int(num_labels)))


def write(path, X, Y, format="xc"):
    """Writes ``(X, Y)`` as XC text (``format="xc"``) or a binary cache (``"cache"``)."""
    _core.write_dataset(to_dataset(X, Y), os.fsdecode(path), format)
