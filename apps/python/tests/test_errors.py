"""Bad inputs raise Python exceptions with the command line's messages, never crash."""

import numpy as np
import pytest
import scipy.sparse as sp

import hetsgd
from conftest import run_cli


def test_unknown_option_and_range_are_the_parsers(small, cli):
    X, Y, _, _ = small
    with pytest.raises(hetsgd.UsageError) as e:
        hetsgd.train(X, Y, lr=0.0, progress=False)
    out = run_cli(cli, "train", "--lr=0.0", check=False)
    assert out.returncode == 2 and str(e.value) in out.stderr and "--lr" in str(e.value)
    with pytest.raises(hetsgd.UsageError, match="--no-such-option"):
        hetsgd.train(X, Y, no_such_option=1, progress=False)
    with pytest.raises(hetsgd.UsageError, match="--algo"):
        hetsgd.train(X, Y, algo="nope", progress=False)
    with pytest.raises(ValueError):  # UsageError is a ValueError too
        hetsgd.train(X, Y, hidden="0", progress=False)


def test_wrong_dtype(small):
    X, Y, _, _ = small
    with pytest.raises(hetsgd.InvalidArgument, match="float64.*float32"):
        hetsgd.train(X.astype(np.float64), Y, progress=False)
    with pytest.raises(hetsgd.InvalidArgument, match="scipy.sparse"):
        hetsgd.train(X.toarray(), Y, progress=False)
    with pytest.raises(hetsgd.InvalidArgument, match="int32 or int64"):
        hetsgd.to_dataset(X, Y, num_labels=12).rows  # fine
        bad = X.copy()
        bad.indices = bad.indices.astype(np.int16)
        hetsgd.train(bad, Y, progress=False)


def test_mismatched_rows(small):
    X, Y, Xt, _ = small
    with pytest.raises(hetsgd.InvalidArgument, match="400 rows"):
        hetsgd.train(X[:399], Y, progress=False)
    model = hetsgd.train(X, Y, epochs=1, hidden=8, progress=False)
    with pytest.raises(hetsgd.InvalidArgument, match="features"):
        model.predict(sp.random(3, 70, density=0.2, format="csr", dtype=np.float32))


def test_negative_index_and_nan(small):
    X, Y, _, _ = small
    bad = X.copy()
    bad.indices = bad.indices.copy()
    bad.indices[5] = -3
    with pytest.raises(hetsgd.InvalidArgument, match=r"indices\[5\] \(row 0\) = -3 is negative"):
        hetsgd.train(bad, Y, progress=False)
    bad = X.copy()
    bad.data[7] = np.nan
    with pytest.raises(hetsgd.InvalidArgument, match="nan"):
        hetsgd.train(bad, Y, progress=False)
    bad = X.copy()
    bad.data[7] = np.inf
    with pytest.raises(hetsgd.InvalidArgument):
        hetsgd.train(bad, Y, progress=False)
    badY = Y.copy()
    badY.indices = badY.indices.copy()
    badY.indices[0] = -1
    with pytest.raises(hetsgd.InvalidArgument, match="negative"):
        hetsgd.train(X, badY, progress=False)
    badp = X.copy()
    badp.indptr = badp.indptr.copy()
    badp.indptr[3] = 10**6
    with pytest.raises(hetsgd.InvalidArgument):
        hetsgd.train(badp, Y, progress=False)


def test_file_errors_name_the_file(tmp_path, cli):
    bad = tmp_path / "bad.txt"
    bad.write_text("2 3 4\n0 0:1.0\n9 1:1.0\n")
    with pytest.raises(hetsgd.IoError) as e:
        hetsgd.read(bad)
    out = run_cli(cli, "data", "stats", bad, check=False)
    assert str(bad) in str(e.value) and str(e.value) in out.stderr
    with pytest.raises(hetsgd.IoError, match="missing.model"):
        hetsgd.load(tmp_path / "missing.model")
    with pytest.raises(OSError):  # IoError is an OSError too
        hetsgd.read(tmp_path / "absent.txt")


def test_callback_exception_stops_training(small):
    X, Y, _, _ = small

    def boom(record):
        raise RuntimeError("from the callback")

    with pytest.raises(RuntimeError, match="from the callback"):
        hetsgd.train(X, Y, callback=boom, time_budget=30, epochs=0, hidden=8, progress=False)


def test_metrics_refuse_bad_shapes(small):
    _, _, _, Yt = small
    with pytest.raises(hetsgd.InvalidArgument, match="rows"):
        hetsgd.metrics.precision(Yt, np.zeros((5, 5), np.int32), 1)
    with pytest.raises(hetsgd.InvalidArgument, match="outside"):
        hetsgd.metrics.precision(Yt, np.full((100, 5), 99, np.int32), 1)
    with pytest.raises(hetsgd.InvalidArgument, match="k = 7"):
        hetsgd.metrics.precision(Yt, np.zeros((100, 5), np.int32), 7)


def test_predict_refuses_k_that_is_not_a_whole_number_in_range(small):
    X, Y, Xt, Yt = small
    model = hetsgd.train(X, Y, epochs=1, hidden=8, threads=1, progress=False)
    for bad in (2.5, 0, 2**40, True, "3"):
        with pytest.raises(hetsgd.InvalidArgument, match="k="):
            model.predict(Xt, k=bad)
    with pytest.raises(hetsgd.InvalidArgument, match="k="):
        model.evaluate(Xt, Yt, k=1.5)
    assert model.predict(Xt, k=np.int64(3))[0].shape == (100, 3)
